"""A CNN digit classifier in PyTorch's idiom (after pytorch/examples ``mnist/main.py``): the same
file runs under PyTorch and under ember; only the import block below differs.

    python examples/pytorch_style/cnn.py --framework ember      # or: --framework torch
    python examples/pytorch_style/cnn.py --framework torch --save-model cnn.safetensors

Data: ember's 1,797 digits upscaled to 28x28 (``common.digits_28``), the same arrays for both.
"""
import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import batches, digits_28, framework  # noqa: E402

FRAMEWORK = framework()
if FRAMEWORK == "torch":
    import torch
    import torch.nn as nn
    import torch.nn.functional as F
    import torch.optim as optim
    from torch.optim.lr_scheduler import StepLR
    DEVICE = torch.device("cpu")
    manual_seed = torch.manual_seed
else:
    import ember as torch
    import ember.nn as nn
    import ember.nn.functional as F
    import ember.optim as optim
    from ember.optim.lr_scheduler import StepLR
    from ember.accel import Autodiff
    DEVICE = Autodiff(torch.Cpu())  # ember records gradients on devices that say so
    manual_seed = torch.seed


class Net(nn.Module):
    def __init__(self, dropout=(0.25, 0.5)):
        super(Net, self).__init__()
        self.conv1 = nn.Conv2d(1, 16, 3, 1)
        self.conv2 = nn.Conv2d(16, 32, 3, 1)
        self.dropout1 = nn.Dropout(dropout[0])
        self.dropout2 = nn.Dropout(dropout[1])
        self.fc1 = nn.Linear(4608, 64)
        self.fc2 = nn.Linear(64, 10)

    def forward(self, x):
        x = self.conv1(x)
        x = F.relu(x)
        x = self.conv2(x)
        x = F.relu(x)
        x = F.max_pool2d(x, 2)
        x = self.dropout1(x)
        x = x.flatten(1)
        x = self.fc1(x)
        x = F.relu(x)
        x = self.dropout2(x)
        x = self.fc2(x)
        output = F.log_softmax(x, dim=1)
        return output


def train(args, model, device, train_loader, optimizer, epoch):
    model.train()
    for batch_idx, (data, target) in enumerate(train_loader):
        data, target = torch.from_numpy(data).to(device), torch.from_numpy(target).to(device)
        optimizer.zero_grad()
        output = model(data)
        loss = F.nll_loss(output, target)
        loss.backward()
        optimizer.step()
        if args.log_interval and batch_idx % args.log_interval == 0:
            print("Train Epoch: {} [{}/{}]\tLoss: {:.6f}".format(
                epoch, batch_idx * len(data), len(train_loader) * args.batch_size, loss.item()))


def test(model, device, test_loader):
    """(average loss, accuracy in percent) over ``test_loader``."""
    model.eval()
    test_loss = 0
    correct = 0
    count = 0
    with torch.no_grad():
        for data, target in test_loader:
            data, target = torch.from_numpy(data).to(device), torch.from_numpy(target).to(device)
            output = model(data)
            test_loss += F.nll_loss(output, target, reduction="sum").item()
            pred = output.argmax(dim=1, keepdim=True)
            correct += pred.eq(target.view(pred.shape)).sum().item()
            count += len(data)
    test_loss /= count
    accuracy = 100.0 * correct / count
    print("\nTest set: Average loss: {:.4f}, Accuracy: {}/{} ({:.1f}%)\n".format(test_loss, correct, count, accuracy))
    return test_loss, accuracy


def build(args):
    """The model (initial weights from ``--load-weights`` when given), its optimizer and scheduler."""
    manual_seed(args.seed)
    model = Net((0.0, 0.0) if args.no_dropout else (0.25, 0.5))
    if args.load_weights:
        load_weights(model, args.load_weights)
    model = model.to(DEVICE)
    optimizer = optim.Adadelta(model.parameters(), lr=args.lr)
    scheduler = StepLR(optimizer, step_size=1, gamma=args.gamma)
    return model, optimizer, scheduler


def load_weights(model, path):
    if FRAMEWORK == "torch":
        from safetensors.torch import load_model
        load_model(model, path)
    else:
        model.load(path)


def save_weights(model, path):
    if FRAMEWORK == "torch":
        from safetensors.torch import save_model
        save_model(model, path)
    else:
        model.save(path)


def parse(argv=None):
    parser = argparse.ArgumentParser(description="A CNN on 28x28 digits, under PyTorch or ember")
    parser.add_argument("--framework", default=FRAMEWORK, choices=("torch", "ember"))
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--test-batch-size", type=int, default=500)
    parser.add_argument("--epochs", type=int, default=1)
    parser.add_argument("--lr", type=float, default=1.0)
    parser.add_argument("--gamma", type=float, default=0.7)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--no-dropout", action="store_true", help="train without dropout (deterministic)")
    parser.add_argument("--max-batches", type=int, default=None, help="stop each epoch after this many")
    parser.add_argument("--log-interval", type=int, default=10)
    parser.add_argument("--load-weights", default=None, help="initial weights (safetensors)")
    parser.add_argument("--save-model", default=None, help="write the trained weights here")
    return parser.parse_args(argv)


def main(argv=None):
    args = parse(argv)
    train_x, train_y, test_x, test_y = digits_28()
    model, optimizer, scheduler = build(args)
    accuracy = None
    for epoch in range(1, args.epochs + 1):
        train(args, model, DEVICE, batches(train_x, train_y, args.batch_size, seed=epoch, limit=args.max_batches),
              optimizer, epoch)
        _, accuracy = test(model, DEVICE, batches(test_x, test_y, args.test_batch_size))
        scheduler.step()
    if args.save_model:
        save_weights(model, args.save_model)
    return accuracy


if __name__ == "__main__":
    main()
