"""Path checks shared by the commands that write folders."""
import os


def file_in_the_way(path):
    """`path`, or its nearest existing ancestor, when that is not a folder (no folder can be made at `path`), else
    None.

    Args:
        path: absolute path of a folder to write.

    Returns:
        the blocking path or None.
    """
    while not os.path.exists(path):
        parent = os.path.dirname(path)
        if parent == path:
            return None
        path = parent
    return None if os.path.isdir(path) else path
