"""A Ray-hosted policy's process gets the OpenMP spin settings of the gateway that placed
it (Ray starts actor processes from its own environment, not the gateway's)."""

from gateway.serve.ray_hosting import actor_runtime_env


def test_the_gateways_spin_bound_travels_to_the_actor():
    environ = {"GOMP_SPINCOUNT": "1000", "PATH": "/usr/bin", "HOME": "/root"}
    assert actor_runtime_env(environ) == {"env_vars": {"GOMP_SPINCOUNT": "1000"}}


def test_a_users_wait_policy_travels_too():
    environ = {"OMP_WAIT_POLICY": "PASSIVE"}
    assert actor_runtime_env(environ) == {"env_vars": {"OMP_WAIT_POLICY": "PASSIVE"}}


def test_without_openmp_settings_the_actor_gets_no_runtime_env():
    assert actor_runtime_env({"PATH": "/usr/bin"}) is None
