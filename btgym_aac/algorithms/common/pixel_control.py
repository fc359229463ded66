"""N-step Q-learning targets of the UNREAL pixel-control task (https://arxiv.org/abs/1611.05397), as numpy parts
the trainer's graph completes with the Q head's own bootstrap.

For a replayed sequence of T frames with pixel changes `pc_t` [H, W] (the change the frame's action caused), the
target of frame t is `sum_{k=t}^{L-1} gamma_pc^(k-t) pc_k + gamma_pc^(L-t) max_a Q(s_L, a)`: when the last frame
ends its episode, L = T and the bootstrap term is dropped; otherwise L = T - 1, the last frame only bootstraps
(its own target would need the state after it) and is left out of the loss.
"""
import numpy as np


def pixel_control_targets(batches, gamma_pc):
    """Target parts of the batch that stacks `batches` (see `utils.batch_stack`).

    Args:
        batches: processed rollouts (`Rollout.process`) with `pixel_change` [n, H, W], `terminal` [n] and `mask`
            [n] (1 on the real frames, which come first; 0 on padding).
        gamma_pc: discount of pixel-change rewards.

    Returns:
        dict with `pc_return` float32 [N, H, W] (the discounted pixel changes up to the bootstrap frame),
        `pc_bootstrap_weight` float32 [N] (`gamma_pc^(L-t)`, 0 without bootstrap), `pc_bootstrap_row` int32 [N]
        (row of the bootstrap frame in the stacked batch) and `pc_mask` float32 [N] (1 on the frames trained),
        N the stacked number of rows.
    """
    parts = {'pc_return': [], 'pc_bootstrap_weight': [], 'pc_bootstrap_row': [], 'pc_mask': []}
    offset = 0
    for batch in batches:
        pixel_change = np.asarray(batch['pixel_change'], dtype=np.float32)
        rows = len(pixel_change)
        length = int(np.sum(batch['mask']))
        bootstrapped = not bool(np.asarray(batch['terminal'])[length - 1])
        trained = length - 1 if bootstrapped else length
        returns = np.zeros_like(pixel_change)
        discounted = np.zeros(pixel_change.shape[1:], dtype=np.float32)
        for t in reversed(range(trained)):
            discounted = pixel_change[t] + gamma_pc * discounted
            returns[t] = discounted
        weight = np.zeros(rows, dtype=np.float32)
        if bootstrapped:
            weight[:trained] = gamma_pc ** np.arange(trained, 0, -1, dtype=np.float64)
        mask = np.zeros(rows, dtype=np.float32)
        mask[:trained] = 1.0
        parts['pc_return'].append(returns)
        parts['pc_bootstrap_weight'].append(weight)
        parts['pc_bootstrap_row'].append(np.full(rows, offset + length - 1, dtype=np.int32))
        parts['pc_mask'].append(mask)
        offset += rows
    return {key: np.concatenate(values) for key, values in parts.items()}
