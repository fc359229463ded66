"""The `btgym-aac tearsheet` command: the tearsheet of a `trade` run (`btgym_aac.deploy.tearsheet`)."""
import os

from btgym_aac.evaluation.tearsheet import TEARSHEET_FILE


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
