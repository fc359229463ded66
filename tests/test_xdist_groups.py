"""The suite's own scheduling: under `--dist loadgroup` (`make test`) pytest-xdist keeps the tests of one
`xdist_group` in one process by the group name it appends to their node ids, so that a group's fixtures are built
once and its clusters do not run side by side. With pytest 9.2 (and pytest-xdist 3.8) the name was not appended and
the groups were spread over both processes: pyproject's test extra keeps pytest below 9.2."""
import pytest


@pytest.mark.xdist_group('grouping_check')
def test_a_grouped_test_carries_its_group_in_its_node_id_exactly_under_loadgroup(request):
    loadgroup = bool(getattr(request.config.option, 'loadgroup', False))
    assert request.node.nodeid.endswith('@grouping_check') == loadgroup, (
        'pytest {} did not take the xdist group into the node id {!r}: install the versions the test extra '
        'names'.format(pytest.__version__, request.node.nodeid))
