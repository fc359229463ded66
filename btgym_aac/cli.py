"""The `btgym-aac` command."""
import argparse
import os
import sys


def _demo(args):
    """Runs one random-action episode on the built-in sine data and writes its renderings as PNG files."""
    import matplotlib.image

    from btgym_aac.env import BTgymEnv
    from btgym_aac.strategy import DevStrat_4_11

    os.makedirs(args.out, exist_ok=True)
    env = BTgymEnv(strategy=DevStrat_4_11, render_modes=['human', 'episode', 'external', 'internal'],
                   random_seed=args.seed)
    env.action_space.seed(args.seed)
    try:
        observation, info = env.reset()
        steps, total_reward, terminated = 0, 0.0, False
        while not terminated:
            observation, reward, terminated, _, info = env.step(env.action_space.sample())
            steps += 1
            total_reward += reward
        last_frame = {mode: env.render(mode) for mode in ('human', 'external', 'internal')}
        stat = env.get_stat()
        last_frame['episode'] = env.render('episode')
    finally:
        env.close()
    written = []
    for mode, image in last_frame.items():
        path = os.path.join(args.out, '{}.png'.format(mode))
        matplotlib.image.imsave(path, image)
        written.append(path)
    print('episode: {} agent steps, {} bars, total reward {:+.3f}, final broker value {:.2f}, runtime {}'.format(
        steps, stat['length'], total_reward, info['broker_value'], stat['runtime']))
    print('renderings written: {}'.format(', '.join(written)))
    return 0


def build_parser():
    """Returns the argparse parser of the `btgym-aac` command."""
    parser = argparse.ArgumentParser(prog='btgym-aac', description=__doc__)
    commands = parser.add_subparsers(dest='command', required=True)
    demo = commands.add_parser('demo', help='run one episode on the built-in data and save its renderings',
                               description=_demo.__doc__)
    demo.add_argument('--out', default='out/demo', help='folder for the PNG files (default: out/demo)')
    demo.add_argument('--seed', type=int, default=0, help='random seed (default: 0)')
    demo.set_defaults(run=_demo)
    return parser


def main(argv=None):
    """Entry point of the `btgym-aac` console script."""
    args = build_parser().parse_args(argv)
    return args.run(args)


if __name__ == '__main__':
    sys.exit(main())
