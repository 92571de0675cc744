"""ember.nn: neural-network building blocks. ``ember.nn.functional`` holds the stateless ops."""
