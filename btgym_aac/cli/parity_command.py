"""The `btgym-aac parity` command: `evaluate` and a replayed `trade` on the same bars, compared
(`btgym_aac.deploy.parity`)."""


def _parity(args):
    """Checks that a policy artifact trades as its run's policy is evaluated: plays one episode window of the data
    (--window, of the data's consecutive windows) with the run's policy as `evaluate` does, replays the window's bars
    (its warm-up included) to the artifact in a paper `trade` run, and compares the decision times, actions,
    action probabilities, fills and final value. Writes the replayed bars, the trade run and parity.json to --out.
    Exit status 0: no difference; 1: differences (printed, and listed in parity.json)."""
    from btgym_aac.deploy.parity import PARITY_FILE, check_parity

    report = check_parity(args.log_dir, args.artifact, args.data, args.out, window=args.window,
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
