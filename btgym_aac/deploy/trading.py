"""`trade`: a policy artifact trading bars as they arrive, in a backtrader live run of the artifact's own strategy.

The strategy class and its kwargs, the broker's cash, commission and sizer come from the manifest, so the
observations are computed from the bars as in training, and the policy acts every `skip_frame` bars. Started again
on the same folder, a run first takes the bars it processed before (`bars.jsonl`) through the strategy and the
policy again, checking every decision against the journal, and then goes on with the feed's newer bars: it takes
the decisions an uninterrupted run takes.
"""
import contextlib
import signal

from btgym_aac.data.base import bt_timeframe
from btgym_aac.deploy.bar_guards import GuardedFeed
from btgym_aac.deploy.feeds import open_feed
from btgym_aac.deploy.journal import TradingFolder
from btgym_aac.deploy.json_values import UnreadableValue, from_json
from btgym_aac.deploy.live_data import LIVE_RECORDS, BarSource, LiveBars
from btgym_aac.deploy.manifest import ArtifactError, import_class
from btgym_aac.deploy.runtime import load_artifact
from btgym_aac.deploy.trader import Trader, TraderAnalyzer
from btgym_aac.env.components import new_engine
from btgym_aac.env.costs import SPREAD_FROM_DATA
from btgym_aac.env.engine import prepare_cerebro
from btgym_aac.evaluation.trade_log import TRADE_LOG_NAME, TradeLog
from btgym_aac.logs import get_logger

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


def check_resumable(saved, manifest, mode, lines, folder):
    """Raises ValueError when the folder holds a run of another artifact, mode or set of data lines."""
    if saved is None:
        return
    for name, value in (('artifact_files', manifest['files']), ('mode', mode), ('lines', lines)):
        if saved.get(name) != value:
            raise ValueError('{} holds a trade run with another {} ({!r}); use a new folder'.format(
                folder, name.replace('_', ' '), saved.get(name) if name != 'artifact_files' else 'artifact'))


@contextlib.contextmanager
def stop_on_signals(trader, flatten):
    """SIGINT and SIGTERM ask the trader to stop after the current decision while inside the block."""
    def handler(signum, _):
        trader.request_stop('signal {}'.format(signal.Signals(signum).name), flatten=flatten)

    previous = {signum: signal.signal(signum, handler) for signum in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for signum, old in previous.items():
            signal.signal(signum, old)


def trade(artifact, feeds, out, mode='paper', backend='onnx', max_bar_delay=None, max_drawdown=None,
          flatten_on_exit=False, feed_options=None):
    """Trades the bars of live feeds with a policy artifact until the feeds end, a stop rule of the strategy
    fires, `max_drawdown` is lost, or SIGINT / SIGTERM comes (the current decision is finished and saved).

    Args:
        artifact: the artifact folder (`btgym-aac export`).
        feeds: a feed spec (`feeds.open_feed`) or a feed object (with `next_bar(timeout)` and `close()`) for a
            single data line, or a dict data line -> spec or feed.
        out: the run's folder: journal.jsonl, state.json, bars.jsonl; a run in it is continued.
        mode: 'paper' or 'shadow'.
        backend: 'onnx' or 'tf'.
        max_bar_delay: seconds without a bar before a feed counts as silent (paper: positions are closed).
        max_drawdown: percent below the peak broker value at which positions are closed and the run stops.
        flatten_on_exit: on SIGINT / SIGTERM, close positions before stopping (paper mode).
        feed_options: dict of keyword options for `open_feed` (the same for every line).

    Returns:
        dict: decisions (of this run, taken again ones included), journaled (new journal lines), bars (processed
        from the feeds), ended (why), end_message (the strategy's end rule, if one fired), positions, cash,
        broker_value, fills (every fill of this run, as `TradeLog` records them).

    Raises:
        ArtifactError: the artifact is damaged, foreign or cannot trade (before any feed is opened).
        ValueError: bad feeds, mode or folder. FeedError: a feed failed for good.
    """
    log = get_logger('Trade')
    policy = load_artifact(artifact, backend=backend)
    manifest = policy.manifest
    _, _, strategy_params, _, lines = live_settings(manifest)
    specs = feed_specs(feeds, lines['names'])
    folder = TradingFolder(out)
    saved = folder.read_state()
    check_resumable(saved, manifest, mode, lines['names'], out)
    journaled, history = folder.read_journal(), folder.read_bars()
    identity = {'artifact_files': manifest['files'], 'mode': mode, 'lines': lines['names']}
    opened = {}
    try:
        for line, spec in specs.items():
            feed = spec if hasattr(spec, 'next_bar') else open_feed(spec, **(feed_options or {}))
            opened[line] = GuardedFeed(feed, max_bar_delay, log)
        counts = [getattr(feed.feed, 'bar_count', None) for feed in opened.values()]
        records = counts[0] if None not in counts else LIVE_RECORDS
        source = BarSource(opened, history, on_bars=folder.append_bars, log=log)
        trader = Trader(policy, folder, mode, source, strategy_params, identity, journaled, saved, max_drawdown,
                        flatten_on_exit, log)
        source.on_silence = trader.on_silence
        cerebro = live_cerebro(manifest, source, records, trader)
        with stop_on_signals(trader, flatten_on_exit):
            cerebro.run(stdstats=False, preload=False, runonce=False, oldbuysell=True, tradehistory=True)
    finally:
        for feed in opened.values():
            feed.close()
        folder.close()
        policy.close()
    return dict(trader.broker_state(), fills=trader.trade_log.rets['fills'], decisions=trader.decisions,
                journaled=max(0, trader.decisions - len(journaled)), bars=source.delivered,
                ended=trader.stop_reason or source.ended or trader.end_message, end_message=trader.end_message)
