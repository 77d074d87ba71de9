"""A character-level recurrent network with dict parameters (autograd's examples/rnn.py)."""

import numpy as np
from scipy.special import logsumexp

NEEDS = "containers"


def sigmoid(x):
    return 0.5 * (np.tanh(x) + 1.0)  # Output ranges from 0 to 1.


def concat_and_multiply(weights, *args):
    cat_state = np.hstack(args + (np.ones((args[0].shape[0], 1)),))
    return np.dot(cat_state, weights)


def create_rnn_params(
    input_size, state_size, output_size, param_scale=0.01, rs=np.random.RandomState(0)
):
    return {
        "init hiddens": rs.randn(1, state_size) * param_scale,
        "change": rs.randn(input_size + state_size + 1, state_size) * param_scale,
        "predict": rs.randn(state_size + 1, output_size) * param_scale,
    }


def rnn_predict(params, inputs):
    def update_rnn(input, hiddens):
        return np.tanh(concat_and_multiply(params["change"], input, hiddens))

    def hiddens_to_output_probs(hiddens):
        output = concat_and_multiply(params["predict"], hiddens)
        return output - logsumexp(output, axis=1, keepdims=True)  # Normalize log-probs.

    num_sequences = inputs.shape[1]
    hiddens = np.repeat(params["init hiddens"], num_sequences, axis=0)
    output = [hiddens_to_output_probs(hiddens)]

    for input in inputs:  # Iterate over time steps.
        hiddens = update_rnn(input, hiddens)
        output.append(hiddens_to_output_probs(hiddens))
    return output


def rnn_log_likelihood(params, inputs, targets):
    logprobs = rnn_predict(params, inputs)
    loglik = 0.0
    num_time_steps, num_examples, _ = inputs.shape
    for t in range(num_time_steps):
        loglik += np.sum(logprobs[t] * targets[t])
    return loglik / (num_time_steps * num_examples)


def string_to_one_hot(string, maxchar):
    """Converts an ASCII string to a one-of-k encoding."""
    ascii = np.array([ord(c) for c in string]).T
    return np.array(ascii[:, None] == np.arange(maxchar)[None, :], dtype=int)


def build_dataset(lines, maxlen, maxchar):
    one_hot = np.zeros((maxlen, len(lines), maxchar))
    for ix, line in enumerate(lines):
        padded = line.ljust(maxlen)[:maxlen]
        one_hot[:, ix, :] = string_to_one_hot(padded, maxchar)
    return one_hot


train_inputs = build_dataset(["abcab", "bacca", "cabba"], maxlen=5, maxchar=4 + 97)[:, :, 97:]


def training_loss(params):
    return -rnn_log_likelihood(params, train_inputs, train_inputs)


objective = training_loss


def make_args():
    return (create_rnn_params(input_size=4, output_size=4, state_size=5, param_scale=0.3),)
