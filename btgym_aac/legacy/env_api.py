"""What BTgymEnv keeps of the original's API for its notebooks and scripts: the `params` dict of dicts, the step
info read as the original's list of per-bar infos, and the original's server settings."""
from btgym_aac.legacy.data_master import DEFAULT_DATA_PORT, PublishedDataset, fetch_dataset

IGNORED_SERVER_KWARGS = ('port', 'network_address', 'data_network_address', 'connect_timeout')


class StepInfo(dict):
    """A step's info: the latest bar's info dict plus `bars`, the infos of every bar since the previous step.

    Integer keys index `bars`, as the original's info (a list of per-bar dicts) was indexed: `info[-1]` is the
    latest bar's info, `info[0]` the first bar's since the previous step.
    """

    def __getitem__(self, key):
        if isinstance(key, int) and not isinstance(key, bool):
            return dict.__getitem__(self, 'bars')[key]
        return dict.__getitem__(self, key)


def engine_settings(engine):
    """The original's `params['engine']`, read from a configured `bt.Cerebro`.

    Returns:
        dict with `start_cash`, `broker_commission` (None when the broker has no default commission) and
        `fixed_stake` (None without a fixed-size sizer).
    """
    broker = engine.broker
    commission = broker.comminfo.get(None)
    sizer = engine.sizers.get(None)
    return dict(start_cash=broker.startingcash,
                broker_commission=commission.p.commission if commission is not None else None,
                fixed_stake=sizer[2].get('stake') if sizer is not None else None)


def original_params(env):
    """The original's `env.params`: {'dataset', 'engine', 'strategy', 'render'} dicts of an env's settings."""
    dataset = env.dataset
    return dict(
        dataset=dict(getattr(dataset, 'params', {}), filename=getattr(dataset, 'filename', None)),
        engine=engine_settings(env.engine),
        strategy=env.strategy_params,
        render=dict(env.renderer.params),
    )


class DataMasterSettings:
    """The original's `data_master` and `data_port` (see `data.data_master`).

    An env made with `data_master=False` takes its dataset from the data master env serving its `data_port` (by
    default 4999); an env given `data_master=True` or a `data_port` serves its own dataset there until it is
    closed. An env given neither serves nothing (every env of a training run).
    """

    def __init__(self, kwargs, log):
        """Pops `data_master`, `data_port` and the ignored server kwargs (`port`, `network_address`,
        `data_network_address`, `connect_timeout`) from `kwargs`.

        Args:
            kwargs: the env's kwargs.
            log: the env's logger.
        """
        data_master = kwargs.pop('data_master', None)
        data_port = kwargs.pop('data_port', None)
        self.is_client = data_master is False
        self.serves = not self.is_client and (data_master is True or data_port is not None)
        self.data_port = DEFAULT_DATA_PORT if data_port is None else int(data_port)
        self.log = log
        self._published = None
        ignored = [key for key in IGNORED_SERVER_KWARGS if kwargs.pop(key, None) is not None]
        if ignored:
            log.debug('ignored (no servers run): {}'.format(ignored))

    def client_dataset(self, given, random_seed):
        """The data master's dataset for a `data_master=False` env, whose own data settings are ignored.

        Args:
            given: names of the dataset settings the env was given (each is warned of).
            random_seed: seed of the copy's sampling.

        Raises:
            DataMasterError: no data master env serves the data port.
        """
        for key in given:
            self.log.warning('`{}` is ignored: a data_master=False env takes its data from the data master env of '
                             'data_port {}'.format(key, self.data_port))
        return fetch_dataset(self.data_port, random_seed)

    def publish(self, dataset):
        """Serves `dataset` on the data port when this env is a data master."""
        if self.serves and self._published is None:
            self._published = PublishedDataset(dataset, self.data_port)

    def copy_without_serving(self):
        """These settings for a copy of the env: a copy serves no dataset (its original does)."""
        copy = object.__new__(DataMasterSettings)
        copy.__dict__.update(self.__dict__, serves=False, _published=None)
        return copy

    def close(self):
        """Stops serving the dataset."""
        if self._published is not None:
            self._published.close()
            self._published = None
