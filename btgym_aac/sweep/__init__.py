"""Searching a configuration's settings without fooling oneself: the verdict's statistics (`deflation`)."""
