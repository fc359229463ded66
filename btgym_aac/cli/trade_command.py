"""The `btgym-aac trade` command: a policy artifact on live feeds (`btgym_aac.deploy.trading.trade`)."""
import sys


def feed_arguments(values):
    """The --feed values as `trade` takes them: one spec, or a dict data line -> spec (from LINE=SPEC values).

    Raises:
        ValueError: several values that do not all name their line, or a line named twice.
    """
    named = {}
    for value in values:
        line, separator, spec = value.partition('=')
        if not separator or ':' in line:
            if len(values) > 1:
                raise ValueError('--feed {!r}: with several feeds, each names its data line (LINE=SPEC)'.format(value))
            return value
        if line in named:
            raise ValueError('--feed: data line {!r} is given twice'.format(line))
        named[line] = spec
    return named


def _trade(args):
    """Trades the bars of live feeds with a policy artifact (`btgym-aac export`): the artifact's strategy computes
    the observations from the bars as they arrive and the policy acts every skip_frame bars; paper: orders go to
    backtrader's broker with the trained cash, commission and order size; shadow: no orders, the intended ones are
    journaled. OUT holds journal.jsonl (one line per decision), state.json and the bars processed; started again on
    the same OUT, the run continues where it stopped. Ctrl-C / SIGTERM finish the current decision and exit 0."""
    from btgym_aac.deploy.live_feeds import FeedError
    from btgym_aac.deploy.trading import trade

    try:
        result = trade(args.artifact, feed_arguments(args.feed), args.out, mode=args.mode, backend=args.backend,
                       max_bar_delay=args.max_bar_delay, max_drawdown=args.max_drawdown,
                       flatten_on_exit=args.flatten_on_exit, show_progress=True)
    except FeedError as error:
        print('btgym-aac trade: the feed failed: {}; the run is saved in {} (start it again to continue)'.format(
            error, args.out), file=sys.stderr)
        return 1
    positions = ', '.join('{} {:g}'.format(asset, size) for asset, size in result['positions'].items())
    print('{} decisions ({} journaled), {} bars; ended: {}; positions: {}; cash {:.2f}, value {:.2f}; journal in '
          '{}'.format(result['decisions'], result['journaled'], result['bars'], result['ended'], positions,
                      result['cash'], result['broker_value'], args.out))
    return 0
