"""PPO under tuned with a critic of its own (AacDensePolicy separate_critic)."""
policy_config = {"kwargs": {"separate_critic": True}}
