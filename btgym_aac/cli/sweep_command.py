"""The `btgym-aac sweep` command: an Optuna search scored out of sample, with a lockbox and a deflated verdict
(`btgym_aac.sweep.sweep`)."""
import os

from btgym_aac.cli.commands import run_resumable
from btgym_aac.cli.config_files import _configs_from_args, algo_of, data_argument


def _sweep(args):
    """Searches the settings of a configuration (the --preset one, or CONFIG.py's over it) with Optuna: every trial is a
    walk-forward over the data less its lockbox, scored by its out-of-sample objective and pruned after a hopeless
    fold; the best trial is then trained on all of that data and tested once on the lockbox, and its score is
    deflated for the number of trials. Shows the trials done and the time left after every trial; writes
    OUT/sweep.json and plots; run the same command again to continue a stopped sweep (with other settings it is
    refused, with a table of what changed), or on several hosts with one --storage to share the study."""
    from btgym_aac.sweep import sweep

    configs = _configs_from_args(args)
    report, status = run_resumable('sweep', lambda: sweep(
        configs, data_argument(args), args.trials, out=args.out, space=args.space, algo=algo_of(args),
        storage=args.storage, study_name=args.study, folds=args.folds, train_steps=args.train_steps,
        test_episodes=args.test_episodes, seed=args.seed or 0, embargo=args.embargo, objective=args.objective,
        lockbox=args.lockbox, pruner=args.pruner, parallel=args.parallel, episode_plots=not args.no_episode_plots,
        search_only=args.search_only))
    if report is None:
        return status
    print('\n'.join(report['lines']))
    if not args.search_only:
        print('report and plots: {}'.format(os.path.abspath(args.out)))
    return 0
