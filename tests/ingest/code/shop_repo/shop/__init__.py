"""A small shop: the fixture repository whose every call's target is known."""
