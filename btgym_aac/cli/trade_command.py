"""The commands around trading a policy artifact: `trade` (on live feeds, `btgym_aac.deploy.trading.trade`),
`tearsheet` (the page of a trade run, `btgym_aac.deploy.tearsheet`) and `parity` (`evaluate` and a replayed `trade`
on the same bars, compared: `btgym_aac.deploy.parity`)."""
import os
import sys

from btgym_aac.evaluation.tearsheet import TEARSHEET_FILE


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
    journaled. OUT holds journal.jsonl (the decisions, the closes and the end of every run), state.json and the bars
    processed; started again on the same OUT, the run continues where it stopped, with the feed's bars after the
    last one processed. Ctrl-C / SIGTERM finish the current decision. Exit status: 0 end of data, 1 a feed failed,
    2 refused, 3 stopped by a signal, 4 --max-drawdown, 5 the strategy's own end rule, 6 a silent feed with
    --stop-on-silence."""
    from btgym_aac.deploy.live_feeds import FeedError
    from btgym_aac.deploy.trader import STOPS
    from btgym_aac.deploy.trading import trade

    try:
        result = trade(args.artifact, feed_arguments(args.feed), args.out, mode=args.mode, backend=args.backend,
                       max_bar_delay=args.max_bar_delay, max_drawdown=args.max_drawdown,
                       flatten_on_exit=args.flatten_on_exit, show_progress=True, close_at_end=args.close_at_end,
                       reset_state=args.reset_state, stop_on_silence=args.stop_on_silence)
    except FeedError as error:
        print('btgym-aac trade: the feed failed: {}; the run is saved in {} (start it again to continue)'.format(
            error, args.out), file=sys.stderr)
        return STOPS['feed failed']
    positions = ', '.join('{} {:g}'.format(asset, size) for asset, size in result['positions'].items())
    skipped = ', {} bars skipped (processed before)'.format(result['skipped']) if result['skipped'] else ''
    print('{} decisions ({} journaled), {} bars{}; ended: {}; positions: {}; cash {:.2f}, value {:.2f}; journal in '
          '{}'.format(result['decisions'], result['journaled'], result['bars'], skipped, result['ended'], positions,
                      result['cash'], result['broker_value'], args.out))
    return result['exit_code']


def _tearsheet(args):
    """Writes the tearsheet of a `trade` run: one self-contained HTML page of its journal (the broker value at every
    decision against the traded prices, the drawdown, the returns per day, the costs, the fills and the settings),
    to TRADE_DIR/tearsheet.html or --out. ARTIFACT is the artifact the run traded with. A run still going is read as
    far as it got. (`evaluate` and `walk-forward` write their own tearsheets.)"""
    from btgym_aac.deploy.tearsheet import write_trade_tearsheet

    path = write_trade_tearsheet(args.out or os.path.join(args.trade_dir, TEARSHEET_FILE), args.trade_dir,
                                 args.artifact)
    print('tearsheet: {}'.format(os.path.abspath(path)))
    return 0


def _parity(args):
    """Checks that a policy artifact trades as its run's policy is evaluated: plays one episode window of the data
    (--window, of the data's consecutive windows) with the run's policy as `evaluate` does, replays the window's bars
    (its warm-up included) to the artifact in a paper `trade` run, and compares the decision times, actions,
    action probabilities, fills and final value. Writes the replayed bars, the trade run and parity.json to --out.
    Exit status 0: no difference; 1: differences (printed, and listed in parity.json)."""
    from btgym_aac.cli.config_files import data_argument
    from btgym_aac.deploy.parity import PARITY_FILE, check_parity

    report = check_parity(args.log_dir, args.artifact, data_argument(args), args.out, window=args.window,
                          backend=args.backend, allow_untrusted=args.allow_untrusted_config)
    window = report['window']
    print('window {} ({} to {}): evaluate {} decisions, {} fills, final value {:.2f}; trade {} decisions, {} fills, '
          'final value {:.2f}'.format(
              report['window_index'], window['window_first_bar_time'], window['window_last_bar_time'],
              report['evaluate']['decisions'], report['evaluate']['fills'], report['evaluate']['final_value'],
              report['trade']['decisions'], report['trade']['fills'], report['trade']['final_value']))
    for kind, entry in report['differences'].items():
        if entry['count']:
            print('{}: {} differences, first: {}'.format(kind, entry['count'], entry['shown'][0]))
    print('parity: {} ({})'.format('yes' if report['parity'] else 'NO', '{}/{}'.format(args.out, PARITY_FILE)))
    return 0 if report['parity'] else 1
