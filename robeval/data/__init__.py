"""Data sources: the embedded digits, image folders, labels and class maps, subsets."""
