"""thelma-py: TheLMA-style lattice Boltzmann and LW-ACM solvers for GPUs, with a NumPy reference."""
