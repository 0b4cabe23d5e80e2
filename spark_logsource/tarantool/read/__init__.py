"""A split of an xlog/snap file read into record batches, and rows as Python values."""
