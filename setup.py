from setuptools import find_packages, setup

setup(
    name='btgym-aac',
    version='0.1.0',
    description="BTGym's distributed actor-critic (A3C / UNREAL / PPO) trading library on Python 3.11+ and "
                'TensorFlow 2.x (tf.compat.v1 graph mode), with a backtrader gymnasium environment.',
    long_description=open('README.md', encoding='utf-8').read(),
    long_description_content_type='text/markdown',
    license='GPL-3.0-or-later',
    python_requires='>=3.11',
    packages=find_packages(include=['btgym_aac', 'btgym_aac.*']),
    install_requires=[
        'tensorflow>=2.16,<2.22',
        'tf-keras>=2.16,<2.22',
        'gymnasium>=1.0,<2',
        'backtrader>=1.9.76,<2',
        'numpy>=1.26',
        'pandas>=2.0',
        'matplotlib>=3.7',
        'logbook>=1.5',
        'greenlet>=3.0',
    ],
    extras_require={
        'test': ['pytest>=7', 'pytest-timeout>=2.1', 'ale-py>=0.9'],
        'atari': ['ale-py>=0.9', 'gymnasium[atari]>=1.0,<2'],
    },
    entry_points={'console_scripts': ['btgym-aac=btgym_aac.cli:main']},
    classifiers=[
        'Programming Language :: Python :: 3',
        'License :: OSI Approved :: GNU General Public License v3 or later (GPLv3+)',
        'Topic :: Office/Business :: Financial :: Investment',
        'Topic :: Scientific/Engineering :: Artificial Intelligence',
    ],
)
