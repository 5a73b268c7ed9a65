"""`failure_cause`: what a dry run's episodes failed with, in one line, from what `swarm run`
prints (outputs as printed by real dry runs of users' workflows)."""

from __future__ import annotations

from researcher.client_output import failure_cause

RAISED = """swarm run workflow.py (code 7659dd6e4f8e) → http://127.0.0.1:42653 run=st-r1-check0
episode ep-23bc301ecad875a8 (task train0): rollout raised
Traceback (most recent call last):
  File "/tmp/wf/my_agent.py", line 20, in rollout
    number = int(re.findall(r"-?\\d+", text)[0])
                 ~~~~~~~~~~~~~~~~~~~~~~~~~~^^^
IndexError: list index out of range
episode ep-9b969ea2845a79f1 (task train0): rollout raised IndexError: list index out of range (again at /tmp/wf/my_agent.py:20, 2 times)
episodes: 2/2 done · 1.34 ep/s · reward – · policy v0 · 2 aborted
"""
INVALID_REWARD = """episode ep-1 (task train-1): rollout returned nan as reward; rewards must be finite
episodes: 4/4 done · 3 aborted
"""
IMPORT_FAILED = """Traceback (most recent call last):
  File "/work/swarm/workflow.py", line 88, in load
    spec.loader.exec_module(module)
  File "/tmp/wf/judge_agent.py", line 3, in <module>
    URL = os.environ["ACME_JUDGE_URL"]
KeyError: 'ACME_JUDGE_URL'
"""


def test_a_raised_rollout_gives_the_exception_the_file_line_and_the_task():
    assert failure_cause(RAISED) == (
        "rollout raised IndexError: list index out of range at my_agent.py:20 (task train0)"
    )


def test_an_invalid_reward_gives_the_clients_own_words():
    assert failure_cause(INVALID_REWARD) == (
        "rollout returned nan as reward; rewards must be finite (task train-1)"
    )


def test_a_workflow_that_fails_to_import_gives_the_last_frame():
    assert failure_cause(IMPORT_FAILED) == "KeyError: 'ACME_JUDGE_URL' at judge_agent.py:3"


def test_output_that_names_no_failure_gives_none():
    assert failure_cause("episodes: 4/4 done · 0 aborted\n") is None


def test_a_repeated_failure_keeps_the_place_its_repeat_line_names():
    repeat = RAISED.splitlines()[7]  # "episode … rollout raised IndexError: … (again at …)"
    assert failure_cause(repeat) == (
        "rollout raised IndexError: list index out of range at my_agent.py:20 (task train0)"
    )
