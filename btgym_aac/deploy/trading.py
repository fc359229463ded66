"""`trade`: a policy artifact trading bars as they arrive, in a backtrader live run of the artifact's own strategy.

The strategy class and its kwargs, the broker's cash, commission and sizer come from the manifest, so the
observations are computed from the bars as in training, and the policy acts every `skip_frame` bars. The run's parts:
`live_bars.BarSource` and `live_bars.LiveBars` deliver the bars (those an earlier run on the folder processed first),
`trader.Trader` takes, checks and journals the decisions and applies the stops, and `trade` assembles them and runs
the Cerebro.

A replayed file is a feed like any other: when it ends the run ends with its positions open, and a run started again
on the folder with the next file continues it bar for bar. With `close_at_end`, the strategy is told the replay's
bar count instead, so its end-of-data rule closes the positions before the file ends, as at the end of an
`evaluate` episode (the `parity` check); such a run, like one ended by the strategy's other end rules, is finished.
"""
import contextlib
import datetime
import signal

from btgym_aac.data.base import bt_timeframe
from btgym_aac.deploy.journal import END_RECORD, TradingFolder
from btgym_aac.deploy.json_values import UnreadableValue, from_json
from btgym_aac.deploy.live_bars import LIVE_RECORDS, BarSource, LiveBars
from btgym_aac.deploy.live_feeds import FeedError, GuardedFeed, open_feed
from btgym_aac.deploy.manifest import ArtifactError, import_class
from btgym_aac.deploy.runtime import load_artifact
from btgym_aac.deploy.trader import STOPS, Trader, TraderAnalyzer, check_state_reset
from btgym_aac.env.components import new_engine
from btgym_aac.env.costs import SPREAD_FROM_DATA
from btgym_aac.env.engine import prepare_cerebro
from btgym_aac.evaluation.trade_log import TRADE_LOG_NAME, TradeLog
from btgym_aac.logs import get_logger
from btgym_aac.progress import Progress

LIVE_METADATA = {'type': 1, 'parent_sample_type': 1}
"""The strategy's episode metadata in a live run: a test episode, as in `evaluate`."""


def live_settings(manifest):
    """(strategy class, strategy kwargs, strategy params, broker settings, data lines) rebuilt from an artifact's
    manifest: the kwargs the env gave the strategy, and of its params the traded assets, the action names (None:
    target weights, PortfolioEnv's) and the cash name.

    Raises:
        ArtifactError: the artifact's env is no backtrader trading env, was given its own engine, takes its spread
            from the data, or a strategy kwarg cannot be rebuilt (naming it).
    """
    strategy, broker, lines = manifest.get('strategy'), manifest.get('broker'), manifest.get('data_lines')
    if not strategy or not broker or not lines:
        raise ArtifactError('the artifact\'s env {} is no backtrader trading env (no strategy or data lines): it '
                            'cannot trade'.format(manifest.get('env', {}).get('class')))
    if broker.get('custom_engine'):
        raise ArtifactError('the artifact\'s env was given its own engine=, which the artifact does not describe: '
                            'trade rebuilds the engine from start_cash, broker_commission and fixed_stake only')
    if broker.get('spread') == SPREAD_FROM_DATA:
        raise ArtifactError("the artifact's broker takes each bar's spread from bid/ask data (spread='data'), which "
                            'live feeds do not deliver: trade cannot charge it')
    kwargs = _decoded(strategy['kwargs'], 'kwarg')
    params = _decoded({name: strategy['params'][name] for name in ('asset_names', 'portfolio_actions', 'cash_name')},
                      'param')
    return import_class(strategy['class']), kwargs, params, from_json(broker), lines


def _decoded(values, kind):
    """`from_json` of every entry; ArtifactError naming the strategy's entry that cannot be rebuilt."""
    decoded = {}
    for name, value in values.items():
        try:
            decoded[name] = from_json(value)
        except (UnreadableValue, ImportError) as error:
            raise ArtifactError('strategy {} {!r} of the artifact: {}'.format(kind, name, error)) from None
    return decoded


def live_cerebro(manifest, source, records, trader):
    """The artifact's engine with one `LiveBars` feed per data line, the step analyzer calling `trader.decide`,
    the trade log and the trader's analyzer."""
    strategy, kwargs, _, settings, lines = live_settings(manifest)
    engine = new_engine(strategy, kwargs, settings)
    timeframe, compression = bt_timeframe(lines['timeframe_minutes'])
    feeds = {line: LiveBars(source=source, line=line, records=records, timeframe=timeframe, compression=compression)
             for line in lines['names']}
    strategy_params = dict(metadata=LIVE_METADATA, trial_metadata={}, dataset_stat=None, trial_stat=None,
                           episode_stat=None)
    prepare_cerebro(engine, feeds, strategy_params, trader.decide)
    engine.addanalyzer(TradeLog, _name=TRADE_LOG_NAME)
    engine.addanalyzer(TraderAnalyzer, trader=trader, trade_log=TRADE_LOG_NAME)
    return engine


def feed_specs(feeds, lines):
    """{data line: feed spec or feed} for the artifact's data lines: a single one serves a single line.

    Raises:
        ValueError: a line without a feed, or a feed for no line of the artifact, naming them.
    """
    if not isinstance(feeds, dict):
        if len(lines) != 1:
            raise ValueError('the artifact trades {} data lines ({}): give one feed per line, LINE=SPEC'.format(
                len(lines), ', '.join(lines)))
        return {lines[0]: feeds}
    missing, unknown = sorted(set(lines) - set(feeds)), sorted(set(feeds) - set(lines))
    if missing or unknown:
        problems = (['no feed for {}'.format(', '.join(missing))] if missing else []) + \
            (['no such line {}'.format(', '.join(unknown))] if unknown else [])
        raise ValueError('feeds must name the artifact\'s data lines {}: {}'.format(', '.join(lines),
                                                                                    '; '.join(problems)))
    return {line: feeds[line] for line in lines}


def check_resumable(saved, records, manifest, mode, lines, folder):
    """Raises ValueError when the folder holds a run of another artifact, mode or set of data lines, or a run the
    strategy's end rule finished (its episode is over: a new run needs a new folder)."""
    if saved is not None:
        for name, value in (('artifact_files', manifest['files']), ('mode', mode), ('lines', lines)):
            if saved.get(name) != value:
                raise ValueError('{} holds a trade run with another {} ({!r}); use a new folder'.format(
                    folder, name.replace('_', ' '), saved.get(name) if name != 'artifact_files' else 'artifact'))
    ends = [record for record in records if record['record'] == END_RECORD]
    if ends and ends[-1].get('episode_ended'):
        raise ValueError('{} holds a trade run its strategy ended ({}): the strategy\'s episode is over and cannot '
                         'be continued; use a new folder'.format(folder, ends[-1]['ended']))


@contextlib.contextmanager
def stop_on_signals(trader, flatten):
    """SIGINT and SIGTERM ask the trader to stop after the current decision while inside the block."""
    def handler(signum, _):
        trader.request_stop('signal', 'signal {}'.format(signal.Signals(signum).name), flatten=flatten)

    previous = {signum: signal.signal(signum, handler) for signum in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for signum, old in previous.items():
            signal.signal(signum, old)


def state_reset_rule(manifest, requested, log):
    """(rule, episode bars) of the run: `requested` (`trader.check_state_reset`), or by default the manifest's
    episode length ('episode'); an artifact that does not record it is never reset (warned)."""
    episode_bars = (manifest.get('episode') or {}).get('bars')
    if requested is None:
        if episode_bars is None:
            log.warning('the artifact does not record the length of its training episodes (exported by an earlier '
                        'version): the policy\'s recurrent state is never reset; choose a rule with --reset-state')
            return 'never', None
        return 'episode', episode_bars
    if check_state_reset(requested) == 'episode' and episode_bars is None:
        raise ValueError('--reset-state episode: the artifact does not record the length of its training episodes; '
                         'export it again, or give a number of decisions, day or never')
    return requested, episode_bars


def _replay_records(opened, history, close_at_end):
    """(records the strategy is told, bars the progress counts to): with `close_at_end`, the bars taken again plus
    those of the replayed files after them, else LIVE_RECORDS; the progress total is None for a live feed."""
    counts = [feed.feed.bars_after(history[-1][line].time if history else None)
              if hasattr(feed.feed, 'bars_after') else None for line, feed in opened.items()]
    total = None if None in counts else len(history) + counts[0]
    if close_at_end and total is None:
        raise ValueError('close_at_end needs replayed files: a live feed has no end of data')
    return (total if close_at_end else LIVE_RECORDS), total


def trade(artifact, feeds, out, mode='paper', backend='onnx', max_bar_delay=None, max_drawdown=None,
          flatten_on_exit=False, feed_options=None, show_progress=False, close_at_end=False, reset_state=None,
          stop_on_silence=False):
    """Trades the bars of live feeds with a policy artifact until the feeds end, a stop rule of the strategy
    fires, `max_drawdown` is lost, or SIGINT / SIGTERM comes (the current decision is finished and saved). The end
    is journaled (`trader.Trader.finish`) whatever it was, a failing feed included.

    Args:
        artifact: the artifact folder (`btgym-aac export`).
        feeds: a feed spec (`live_feeds.open_feed`) or a feed object (with `next_bar(timeout)` and `close()`) for a
            single data line, or a dict data line -> spec or feed.
        out: the run's folder: journal.jsonl, state.json, bars.jsonl; a run in it is continued.
        mode: 'paper' or 'shadow'.
        backend: 'onnx' or 'tf'.
        max_bar_delay: seconds without a bar before a feed counts as silent (paper: positions are closed).
        max_drawdown: percent below the peak broker value at which positions are closed and the run stops.
        flatten_on_exit: on SIGINT / SIGTERM, close positions before stopping (paper mode).
        feed_options: dict of keyword options for `open_feed` (the same for every line).
        show_progress: show the bars processed (of a replayed file's, with the time left), their speed, the
            decisions, the latest bar's time and the broker value on stderr (`btgym_aac.progress.Progress`).
        close_at_end: replayed files only: the strategy's end-of-data rule closes the positions before the files
            end, as `evaluate` ends an episode.
        stop_on_silence: a feed silent for `max_bar_delay` ends the run at once (exit status 6), positions as they
            are, instead of closing them at its next bar.
        reset_state: when the policy's recurrent state is reset ('episode', 'day', 'never' or a number of
            decisions; see `trader.Trader`); None: every training episode's decisions, as the manifest records.

    Returns:
        dict: decisions (of this run, taken again ones included), journaled (new journal lines), bars (processed
        from the feeds), skipped (feed bars already processed before), gap (last bar time before, first new one)
        or None, ended (why), stop (a key of `trader.STOPS`), exit_code, end_message (the strategy's end rule, if
        one fired), positions, cash, broker_value, fills (every fill of this run, as `TradeLog` records them).

    Raises:
        ArtifactError: the artifact is damaged, foreign or cannot trade (before any feed is opened).
        ValueError: bad feeds, mode, reset rule or folder (`trader.ResumeError`: the run on the folder is not taken
            again as journaled). FeedError: a feed failed for good.
    """
    if stop_on_silence and max_bar_delay is None:
        raise ValueError('stop_on_silence needs max_bar_delay, the seconds without a bar that make a feed silent')
    log = get_logger('Trade')
    policy = load_artifact(artifact, backend=backend)
    manifest = policy.manifest
    _, _, strategy_params, _, lines = live_settings(manifest)
    specs = feed_specs(feeds, lines['names'])
    folder = TradingFolder(out)
    saved, records = folder.read_state(), folder.read_records()
    check_resumable(saved, records, manifest, mode, lines['names'], out)
    state_reset, episode_bars = state_reset_rule(manifest, reset_state, log)
    journaled, history = folder.read_journal(), folder.read_bars()
    identity = {'artifact_files': manifest['files'], 'mode': mode, 'lines': lines['names']}
    opened, trader = {}, None
    try:
        for line, spec in specs.items():
            feed = spec if hasattr(spec, 'next_bar') else open_feed(spec, **(feed_options or {}))
            opened[line] = GuardedFeed(feed, max_bar_delay, log)
        records_told, total = _replay_records(opened, history, close_at_end)
        source = BarSource(opened, history, on_bars=folder.append_bars, log=log,
                           bar_interval=datetime.timedelta(minutes=lines['timeframe_minutes']))
        progress = Progress('bar', total, enabled=show_progress)
        trader = Trader(policy, folder, mode, source, strategy_params, identity, journaled, records, saved,
                        max_drawdown, flatten_on_exit, stop_on_silence, state_reset, episode_bars, log, progress)
        source.on_silence = trader.on_silence
        cerebro = live_cerebro(manifest, source, records_told, trader)
        with stop_on_signals(trader, flatten_on_exit), progress:
            cerebro.run(stdstats=False, preload=False, runonce=False, oldbuysell=True, tradehistory=True)
        kind, reason = trader.ending()
        trader.finish(kind, reason)
    except FeedError as error:
        if trader is not None:
            trader.finish('feed failed', 'feed failed: {}'.format(error))
        raise
    except ValueError as error:
        if trader is not None:
            trader.finish('refused', 'refused: {}'.format(error))
        raise
    finally:
        for feed in opened.values():
            feed.close()
        folder.close()
        policy.close()
    return dict(trader.broker_state(), fills=trader.trade_log.rets['fills'], decisions=trader.decisions,
                journaled=max(0, trader.decisions - len(journaled)), bars=source.delivered, skipped=source.skipped,
                gap=source.gap, ended=reason, stop=kind, exit_code=STOPS[kind], end_message=trader.end_message)
