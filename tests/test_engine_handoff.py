"""The hand-off between an env and its backtrader episode, which runs in a greenlet of the env's thread."""
import threading

from btgym_aac.env.engine import STOP, Handoff


def episode(handoff, answer, before_first_answer=None):
    """An episode target answering `answer` at every decision until it is stopped."""
    def target():
        action = handoff.decide(None)
        if before_first_answer is not None:
            before_first_answer()
        while action is not STOP:
            action = handoff.decide(answer)
        return 'stopped'
    return target


def test_exchange_runs_the_episode_to_its_next_decision_and_stop_ends_it():
    handoff = Handoff()
    handoff.start(episode(handoff, 'bar'))
    assert handoff.exchange('buy') == 'bar' and handoff.exchange('hold') == 'bar'
    handoff.stop()
    assert handoff.finished and handoff.result == 'stopped'
    assert handoff.exchange('hold') is None


def test_an_episode_stopped_inside_another_episode_hands_control_back_to_that_episode():
    # An env's finalizer (Handoff.stop) may run during a garbage collection inside another env's episode.
    first = Handoff()
    first.start(episode(first, 'first'))
    assert first.exchange('go') == 'first'
    second = Handoff()
    second.start(episode(second, 'second', before_first_answer=first.stop))
    assert second.exchange('go') == 'second'
    assert first.finished and first.result == 'stopped'
    assert second.exchange('go') == 'second'


def test_stop_from_another_thread_drops_the_episode_without_running_it():
    handoff = Handoff()
    handoff.start(episode(handoff, 'bar'))
    handoff.exchange('go')
    stopper = threading.Thread(target=handoff.stop)
    stopper.start()
    stopper.join()
    assert handoff._episode is None and not handoff.finished
