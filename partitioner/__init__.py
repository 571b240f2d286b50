"""The host partitioner: turns edge lists, matrices, arrays and generators into a Seraph store."""
