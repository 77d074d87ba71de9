"""A 2-D convolution written as a sum of shifted slices in a double comprehension, then a
pooled relu (how convolutions are written without a library call)."""

import numpy as np

NEEDS = "comprehensions"


def conv2d(image, kernel):
    kh, kw = kernel.shape
    H, W = image.shape[0] - kh + 1, image.shape[1] - kw + 1
    return sum(kernel[i, j] * image[i : i + H, j : j + W] for i in range(kh) for j in range(kw))


def relu(x):
    return np.maximum(0.0, x)


image = np.random.default_rng(0).normal(size=(6, 6))


def objective(kernel):
    features = relu(conv2d(image, kernel) + 0.1)
    return np.mean(features**2)


def make_args():
    return (np.random.default_rng(1).normal(size=(3, 3)),)
