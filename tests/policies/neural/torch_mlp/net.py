"""The network of the torch test policy (a sibling module, imported by policy.py)."""
import torch


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.body = torch.nn.Sequential(torch.nn.Linear(17, 64), torch.nn.ReLU(), torch.nn.Linear(64, 5))

    def forward(self, x):
        return self.body(x)
