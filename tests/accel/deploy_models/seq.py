"""A Sequential model written with ``import ember.nn.layers as nn``: every parameter-free layer."""
import ember.nn.layers as nn


class Seq(nn.Sequential):
    def __init__(self):
        super().__init__(
            nn.Conv2d(1, 3, 3, padding=1, stride=2), nn.ReLU(), nn.Dropout(0.2),
            nn.Conv2d(3, 4, (3, 3), padding="same", groups=1), nn.ReLU(), nn.AvgPool2d(2),
            nn.MaxPool2d(2, stride=1, padding=1), nn.Identity(), nn.Flatten(), nn.Linear(4 * 4 * 4, 5, bias=False),
        )
