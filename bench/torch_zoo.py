"""PyTorch equivalents of the model zoo in models/*.dnn, as a user would write them: the same
layers, the same loss (CrossEntropyLoss) and the optimizer of the model's train block. Shared by
bench/torch_bench.py (speed) and bench/torch_memory.py (peak memory).

    model, sample_shape = make_model(name)   # name: the stem of a models/*.dnn file
    opt = make_optimizer(name, model)
"""
import torch
from torch import nn
from torch.nn import functional as F


def conv_bn(cin, cout, stride=1):
    return [nn.Conv2d(cin, cout, 3, stride=stride, padding=1, bias=False), nn.BatchNorm2d(cout)]


class ResNetMnist(nn.Module):
    """models/resnet_mnist.dnn: stem, two residual blocks with identity shortcuts, a stride-2 conv."""

    def __init__(self):
        super().__init__()
        self.stem, self.bn0 = conv_bn(1, 16)
        self.b1c1, self.b1bn1 = conv_bn(16, 16)
        self.b1c2, self.b1bn2 = conv_bn(16, 16)
        self.down, self.bnd = conv_bn(16, 32, stride=2)
        self.b2c1, self.b2bn1 = conv_bn(32, 32)
        self.b2c2, self.b2bn2 = conv_bn(32, 32)
        self.fc = nn.Linear(32, 10)

    def forward(self, x):
        x0 = F.relu(self.bn0(self.stem(x)))
        x1 = F.relu(x0 + self.b1bn2(self.b1c2(F.relu(self.b1bn1(self.b1c1(x0))))))
        x2 = F.relu(self.bnd(self.down(x1)))
        x3 = F.relu(x2 + self.b2bn2(self.b2c2(F.relu(self.b2bn1(self.b2c1(x2))))))
        return self.fc(torch.flatten(F.avg_pool2d(x3, 14), 1))


class FashionCNN(nn.Module):
    """models/fashion_cnn.dnn: two conv + batchnorm + max-pool blocks, dropout before the classifier."""

    def __init__(self):
        super().__init__()
        self.conv1, self.bn1 = conv_bn(1, 16)
        self.conv2, self.bn2 = conv_bn(16, 32)
        self.fc1 = nn.Linear(32 * 7 * 7, 128)
        self.fc2 = nn.Linear(128, 10)
        self.drop = nn.Dropout(0.25)

    def forward(self, x):
        h1 = F.max_pool2d(F.relu(self.bn1(self.conv1(x))), 2)
        h2 = F.max_pool2d(F.relu(self.bn2(self.conv2(h1))), 2)
        return self.fc2(self.drop(F.relu(self.fc1(torch.flatten(h2, 1)))))


def mlp():
    return nn.Sequential(nn.Flatten(), nn.Linear(784, 512), nn.ReLU(), nn.Linear(512, 256), nn.ReLU(),
                         nn.Linear(256, 10))


def make_model(name):
    mnist, cifar = (1, 28, 28), (3, 32, 32)
    if name in ("mnist_mlp", "mnist_mlp_adam"):
        return mlp(), mnist
    if name == "mlp_layernorm_adamw":
        return nn.Sequential(nn.Flatten(), nn.Linear(784, 256), nn.LayerNorm(256), nn.GELU(), nn.Linear(256, 128),
                             nn.LayerNorm(128), nn.GELU(), nn.Linear(128, 10)), mnist
    if name == "lenet5":
        return nn.Sequential(nn.Conv2d(1, 6, 5, padding=2), nn.ReLU(), nn.MaxPool2d(2), nn.Conv2d(6, 16, 5), nn.ReLU(),
                             nn.MaxPool2d(2), nn.Flatten(), nn.Linear(16 * 5 * 5, 120), nn.ReLU(), nn.Linear(120, 84),
                             nn.ReLU(), nn.Linear(84, 10)), mnist
    if name == "cifar_cnn":
        return nn.Sequential(nn.Conv2d(3, 16, 3), nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(),
                             nn.Linear(16 * 15 * 15, 10)), cifar
    if name == "cifar_strided":
        return nn.Sequential(nn.Conv2d(3, 16, 3, padding=1), nn.ReLU(), nn.Conv2d(16, 32, 3, stride=2, padding=1),
                             nn.ReLU(), nn.AvgPool2d(2), nn.Flatten(), nn.Linear(32 * 8 * 8, 10)), cifar
    if name == "vgg_cifar":
        return nn.Sequential(*conv_bn(3, 32), nn.ReLU(), *conv_bn(32, 32), nn.ReLU(), nn.MaxPool2d(2),
                             *conv_bn(32, 64), nn.ReLU(), *conv_bn(64, 64), nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(),
                             nn.Linear(64 * 8 * 8, 128), nn.ReLU(), nn.Linear(128, 10)), cifar
    if name == "resnet_mnist":
        return ResNetMnist(), mnist
    if name == "fashion_cnn":
        return FashionCNN(), mnist
    raise SystemExit(f"torch_zoo: no PyTorch equivalent of model '{name}'")


# The optimizer of each model's train block.
OPTIMIZERS = {
    "mnist_mlp": lambda p: torch.optim.SGD(p, lr=0.001, momentum=0.9),
    "mnist_mlp_adam": lambda p: torch.optim.Adam(p, lr=1e-3),
    "mlp_layernorm_adamw": lambda p: torch.optim.AdamW(p, lr=1e-3, weight_decay=0.01),
    "lenet5": lambda p: torch.optim.SGD(p, lr=0.01, momentum=0.9),
    "cifar_cnn": lambda p: torch.optim.SGD(p, lr=0.001, momentum=0.9),
    "cifar_strided": lambda p: torch.optim.SGD(p, lr=0.01, momentum=0.9),
    "vgg_cifar": lambda p: torch.optim.SGD(p, lr=0.01, momentum=0.9),
    "resnet_mnist": lambda p: torch.optim.SGD(p, lr=0.05, momentum=0.9),
    "fashion_cnn": lambda p: torch.optim.Adam(p, lr=2e-3),
}


def make_optimizer(name, model):
    return OPTIMIZERS[name](model.parameters())
