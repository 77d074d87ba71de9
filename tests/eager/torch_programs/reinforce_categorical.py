"""REINFORCE as the PyTorch examples write it (examples/reinforcement_learning): a policy
network gives logits, torch.distributions.Categorical gives log_prob and entropy, returns
are discounted and normalised, and the loss is -log_prob * return minus an entropy bonus,
on a tiny hand-written corridor environment.

The policy samples actions with a seeded generator, but the two libraries draw different
numbers, so the trajectory follows a fixed action schedule (what a replayed episode does);
the sample is checked for its range and shape only. The log-probabilities, entropies and
losses of the fixed actions are what must agree."""

# torch_programs: rtol=1e-5

import argparse
import os

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.distributions import Categorical


class Corridor:
    """Walk left (0), stay (1) or right (2) on positions 0..6; reward 1 at the right end."""

    n_actions = 3

    def __init__(self, length=7):
        self.length = length

    def reset(self):
        self.pos = 1
        return self.observe()

    def observe(self):
        state = torch.zeros(self.length)
        state[self.pos] = 1.0
        return state

    def step(self, action):
        self.pos = min(max(self.pos + action - 1, 0), self.length - 1)
        done = self.pos == self.length - 1
        reward = 1.0 if done else -0.05
        return self.observe(), reward, done


class Policy(nn.Module):
    def __init__(self, n_in=7, hidden=32, n_actions=3):
        super().__init__()
        self.affine1 = nn.Linear(n_in, hidden)
        self.affine2 = nn.Linear(hidden, n_actions)
        self.saved_log_probs = []
        self.entropies = []
        self.rewards = []

    def forward(self, x):
        x = F.relu(self.affine1(x))
        return self.affine2(x)


def select_action(policy, state, scheduled, generator):
    logits = policy(state.unsqueeze(0))
    m = Categorical(logits=logits)
    sampled = torch.multinomial(m.probs, 1, generator=generator)
    assert sampled.shape == (1, 1) and 0 <= int(sampled) < Corridor.n_actions
    drawn = m.sample()  # (the global generator, seeded by torch.manual_seed)
    assert drawn.shape == (1,) and drawn.dtype == torch.int64 and m.support.check(drawn).all()
    action = torch.tensor([scheduled])
    policy.saved_log_probs.append(m.log_prob(action))
    policy.entropies.append(m.entropy())
    return action.item()


def finish_episode(policy, optimizer, gamma, eps):
    R = 0
    returns = []
    for r in policy.rewards[::-1]:
        R = r + gamma * R
        returns.insert(0, R)
    returns = torch.tensor(returns)
    returns = (returns - returns.mean()) / (returns.std() + eps)
    policy_loss = []
    for log_prob, R in zip(policy.saved_log_probs, returns):
        policy_loss.append(-log_prob * R)
    entropy = torch.cat(policy.entropies).mean()
    optimizer.zero_grad()
    loss = torch.cat(policy_loss).sum() - 0.01 * entropy
    loss.backward()
    optimizer.step()
    del policy.rewards[:], policy.saved_log_probs[:], policy.entropies[:]
    return loss.item(), entropy.item()


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--out_dir", default="out")
    parser.add_argument("--gamma", type=float, default=0.99)
    args = parser.parse_args()
    os.makedirs(args.out_dir, exist_ok=True)
    torch.manual_seed(543)
    generator = torch.Generator().manual_seed(0)
    env = Corridor()
    policy = Policy()
    optimizer = torch.optim.Adam(policy.parameters(), lr=1e-2)
    eps = torch.finfo(torch.float32).eps
    schedules = [[2, 2, 0, 2, 1, 2, 2, 2], [1, 2, 2, 2, 2, 2], [0, 0, 2, 2, 2, 1, 2, 2, 2]]
    running_reward = 0.0
    for episode in range(6):
        state, ep_reward = env.reset(), 0.0
        for action in schedules[episode % len(schedules)]:
            select_action(policy, state, action, generator)
            state, reward, done = env.step(action)
            policy.rewards.append(reward)
            ep_reward += reward
            if done:
                break
        running_reward = 0.05 * ep_reward + (1 - 0.05) * running_reward
        log_probs = torch.cat(policy.saved_log_probs).tolist()
        loss, entropy = finish_episode(policy, optimizer, args.gamma, eps)
        print(f"episode {episode}: reward {ep_reward:.2f} running {running_reward:.4f}")
        print("  log_probs", " ".join(f"{v:.8g}" for v in log_probs))
        print(f"  loss {loss:.8g} entropy {entropy:.8g}")
    with torch.no_grad():
        probs = Categorical(logits=policy(torch.eye(7))).probs
    print("final policy", " ".join(f"{v:.8g}" for v in probs.flatten().tolist()))
    torch.save(policy.state_dict(), os.path.join(args.out_dir, "final_state.pt"))


if __name__ == "__main__":
    main()
