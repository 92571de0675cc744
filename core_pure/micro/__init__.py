"""ember.micro: the deployment runtime, what ``ember deploy`` puts on a board.

The layers and functional ops of ``ember.nn`` that inference on a microcontroller needs
(Conv2d, Linear, ReLU, pooling, Flatten, Dropout, Sequential), computing in int8 with int32-sized
integer accumulation, or in float32, with every intermediate tensor in one preplanned arena. A
bundle maps ``ember.nn``'s module names onto these, so the model definition that trained on the
desktop or GPU runs here unchanged, from the same safetensors record (see docs/deploy.md).

It imports nothing from the rest of ember but ``ember.errors``: a board pays only for this.
"""
