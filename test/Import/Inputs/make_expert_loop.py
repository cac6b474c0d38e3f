"""Saves a mixture-of-experts module whose experts run in a loop over the
experts some token chose, as Hugging Face's Mixtral (a ModuleList indexed
by the loop's tensor) and GPT-OSS (stacked expert weights indexed by it)
blocks do since transformers 4.54:

    expert_hit = torch.greater(expert_mask.sum(dim=(-1, -2)), 0).nonzero()
    for expert_idx in expert_hit: ...  index_add_(0, top_x, ...)

traced on tokens that choose every expert, with PyTorch's outputs on three
inputs, for test/Import/expert-loop.test: `all` (every expert chosen),
`partial` (no token chooses expert 2) and `two` (only experts 0 and 3 are
chosen). With --fewer, it is traced on tokens that leave expert 2 unchosen
(the trace then has three iterations); with --leak, forward also returns
the sum of the expert mask's row that the Mixtral loop's last iteration
reads (a value of an iteration that no index_add_ writes).

usage: make_expert_loop.py OUT [--fewer] [--leak]

OUT receives traced.pt (forward(x: f32 [2, 8, 16]) -> (mixtral, gpt_oss)
[2, 8, 16] each), scripted.pt (the GPT-OSS form alone, scripted: its
output is output1), mixed.pt (MixedIterations, scripted) and, per input
NAME, NAME/x.npy and
NAME/expected/output<k>.npy.
"""

import os
import sys

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

EXPERTS, DIM, HIDDEN, TOP = 4, 16, 32, 2
LEAK = "--leak" in sys.argv


class Expert(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.w1 = nn.Linear(DIM, HIDDEN, bias=False)
        self.w2 = nn.Linear(HIDDEN, DIM, bias=False)
        self.w3 = nn.Linear(DIM, HIDDEN, bias=False)

    def forward(self, x):
        return self.w2(F.silu(self.w1(x)) * self.w3(x))


class ExpertLoops(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.gate = nn.Linear(DIM, EXPERTS, bias=False)
        self.experts = nn.ModuleList(Expert() for _ in range(EXPERTS))
        self.gate_up_proj = nn.Parameter(torch.randn(EXPERTS, DIM, 2 * HIDDEN) * DIM ** -0.5)
        self.gate_up_proj_bias = nn.Parameter(0.1 * torch.randn(EXPERTS, 2 * HIDDEN))
        self.down_proj = nn.Parameter(torch.randn(EXPERTS, HIDDEN, DIM) * HIDDEN ** -0.5)
        self.num_experts = EXPERTS
        self.top_k = TOP
        self.dim = DIM

    def route(self, hidden_states):
        router_logits = self.gate(hidden_states)
        routing_weights = F.softmax(router_logits, dim=1, dtype=torch.float)
        routing_weights, selected_experts = torch.topk(routing_weights, self.top_k, dim=-1)
        routing_weights = routing_weights / routing_weights.sum(dim=-1, keepdim=True)
        return routing_weights, selected_experts

    def mixtral(self, hidden_states):
        routing_weights, selected_experts = self.route(hidden_states)
        final_hidden_states = torch.zeros_like(hidden_states)
        self.leaked = torch.zeros(())
        expert_mask = F.one_hot(selected_experts, num_classes=self.num_experts).permute(2, 1, 0)
        expert_hit = torch.greater(expert_mask.sum(dim=(-1, -2)), 0).nonzero()
        for expert_idx in expert_hit:
            expert_layer = self.experts[expert_idx]
            idx, top_x = torch.where(expert_mask[expert_idx].squeeze(0))
            self.leaked = expert_mask[expert_idx].sum()
            current_state = hidden_states[None, top_x].reshape(-1, self.dim)
            current_hidden_states = expert_layer(current_state) * routing_weights[top_x, idx, None]
            final_hidden_states.index_add_(0, top_x, current_hidden_states.to(hidden_states.dtype))
        return final_hidden_states

    def gpt_oss(self, hidden_states):
        routing_weights, selected_experts = self.route(hidden_states)
        scores = torch.zeros(hidden_states.shape[0], self.num_experts).scatter_(1, selected_experts,
                                                                        routing_weights)
        next_states = torch.zeros_like(hidden_states)
        with torch.no_grad():
            expert_mask = F.one_hot(selected_experts, num_classes=self.num_experts).permute(2, 1, 0)
            expert_hit = torch.greater(expert_mask.sum(dim=(-1, -2)), 0).nonzero()
        for expert_idx in expert_hit[:]:
            expert_idx = expert_idx[0]
            with torch.no_grad():
                _, token_idx = torch.where(expert_mask[expert_idx])
            current_state = hidden_states[token_idx]
            gate_up = current_state @ self.gate_up_proj[expert_idx] + self.gate_up_proj_bias[expert_idx]
            gate, up = gate_up[..., ::2], gate_up[..., 1::2]
            gated_output = (up.clamp(min=-1.0, max=1.0) + 1) * F.silu(gate)
            out = gated_output @ self.down_proj[expert_idx]
            next_states.index_add_(0, token_idx, out * scores[token_idx, expert_idx, None])
        return next_states

    def forward(self, x):
        b, t, d = x.shape
        flat = x.reshape(-1, d)
        mixtral = self.mixtral(flat).reshape(b, t, d)
        gpt_oss = self.gpt_oss(flat).reshape(b, t, d)
        if LEAK:
            return mixtral, gpt_oss, self.leaked
        return mixtral, gpt_oss


class ScriptedGptOss(ExpertLoops):
    """The GPT-OSS form alone, for torch.jit.script (a prim::Loop over
    len(expert_hit) whose body selects each entry)."""

    def forward(self, x):
        b, t, d = x.shape
        return self.gpt_oss(x.reshape(-1, d)).reshape(b, t, d)


class MixedIterations(ExpertLoops):
    """The GPT-OSS loop scripted, each iteration also choosing at run time
    between a value of its own and one the iteration before computed (which
    titan refuses: every iteration runs, gated by its own entry)."""

    def forward(self, x):
        b, t, d = x.shape
        hidden_states = x.reshape(-1, d)
        routing_weights, selected_experts = self.route(hidden_states)
        next_states = torch.zeros_like(hidden_states)
        expert_mask = F.one_hot(selected_experts, num_classes=self.num_experts).permute(2, 1, 0)
        expert_hit = torch.greater(expert_mask.sum(dim=(-1, -2)), 0).nonzero()
        previous = torch.zeros(())
        for expert_idx in expert_hit[:]:
            expert_idx = expert_idx[0]
            _, token_idx = torch.where(expert_mask[expert_idx])
            out = hidden_states[token_idx] @ self.gate_up_proj[expert_idx][:, :self.dim]
            total = self.gate_up_proj_bias[expert_idx].sum()
            if bool(total > 0):
                kept = total
            else:
                kept = previous
            previous = total
            next_states.index_add_(0, token_idx, out * kept)
        return next_states.reshape(b, t, d)


def avoiding(model: ExpertLoops, favoured, shunned, generator) -> torch.Tensor:
    """Tokens whose router logits are high for `favoured` experts and low
    for `shunned` ones (noise on a direction solved from the router)."""
    target = torch.zeros(EXPERTS)
    target[favoured] = 1.0
    target[shunned] = -1.0
    direction = torch.linalg.pinv(model.gate.weight.detach()) @ target
    return 0.3 * torch.randn(DIM, generator=generator) + 8.0 * direction


def main() -> None:
    out = sys.argv[1]
    torch.manual_seed(0)
    model = ExpertLoops().eval()
    generator = torch.Generator().manual_seed(1)
    inputs = {"all": torch.randn(2, 8, DIM, generator=generator)}
    inputs["partial"] = torch.stack([avoiding(model, [0, 1, 3][i % 3:i % 3 + 1] + [(i % 3 + 1) % 2 * 3],
                                              [2], generator) for i in range(16)]).reshape(2, 8, DIM)
    inputs["two"] = torch.stack([avoiding(model, [0, 3], [1, 2], generator)
                                 for _ in range(16)]).reshape(2, 8, DIM)
    traced_on = inputs["partial" if "--fewer" in sys.argv else "all"]
    os.makedirs(out, exist_ok=True)
    torch.jit.trace(model, traced_on, check_trace=False).save(os.path.join(out, "traced.pt"))
    scripted = ScriptedGptOss().eval()
    scripted.load_state_dict(model.state_dict())
    torch.jit.script(scripted).save(os.path.join(out, "scripted.pt"))
    torch.jit.script(MixedIterations().eval()).save(os.path.join(out, "mixed.pt"))
    with torch.no_grad():
        for name, x in inputs.items():
            chosen = set(model.route(x.reshape(-1, DIM))[1].flatten().tolist())
            print(name, "chooses experts", sorted(chosen))
            os.makedirs(os.path.join(out, name, "expected"), exist_ok=True)
            np.save(os.path.join(out, name, "x.npy"), x.numpy())
            for k, y in enumerate(model(x)):
                np.save(os.path.join(out, name, "expected", "output%d.npy" % k), y.numpy())


if __name__ == "__main__":
    main()
