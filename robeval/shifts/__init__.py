"""Robustness to corruptions and distribution shift (ImageNet-C, -3DCC, -C-bar, -A, -R, -V2, -Sketch;
CIFAR-10-C, CIFAR-100-C, CIFAR-10.1) in the same runs as attacks: the benchmarks' facts (catalog),
the shift kinds and the folder layouts they check (kinds), the shifted images (condition_images:
generated or read from image folders, and ImageNet-A/-R's 200-class view of a model; arrays: .npy
files) and the metrics."""
