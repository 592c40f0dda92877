from testbed.conftest import testbed_factory  # noqa: F401  (the emulated-network fixture, for the slow test)
