"""Research modules: strategies, experts, policies, losses and trainers built on the core library (`gps`: guided
policy search)."""
