"""Control: tuned with its observations standardised by running statistics, without the price level."""
policy_config = {'kwargs': {'normalize_observations': True}}
