//! A Bitcoin Core blocks/ directory: blk*.dat (with the xor.dat key) and rev*.dat.
