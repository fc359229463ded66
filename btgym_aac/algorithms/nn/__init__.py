"""Neural-network building blocks: `layers` (dense, NoisyNet, convolutions), `layer_norm` (layer normalisation
and the layer-normalised LSTM cell), `networks` (encoders, LSTM stack, heads) and `losses`."""
