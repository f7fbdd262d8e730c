pragma circom 2.0.0;

// A circuit of any size for benchmarks: a chain of squarings (full-width witness values) with a
// boolean check beside every step (0/1 witness values), as hash and range-check gadgets mix them.
template Chain(steps) {
    signal input x0;         // public
    signal input k;
    signal output y;
    signal x[steps + 1];
    signal bit[steps];
    x[0] <== x0 * k;
    for (var i = 0; i < steps; i++) {
        x[i + 1] <== x[i] * x[i] + k;
        bit[i] <-- (i >> 1) & 1;
        bit[i] * (bit[i] - 1) === 0;
    }
    y <== x[steps] * x0;
}
