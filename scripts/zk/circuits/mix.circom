pragma circom 2.0.0;

// A small circuit with every kind of term a prover meets: public inputs and outputs, private
// inputs, constants, linear combinations on both sides of a product, a signal that is zero and
// boolean checks. The prover tests use it for exact comparisons with snarkjs.
template Mix(n) {
    signal input a;
    signal input b;
    signal input c;          // public
    signal output out;
    signal output sum;
    signal x[n];
    signal bit[n];
    signal zero;

    zero <== a * 0;
    x[0] <== a * b;
    for (var i = 1; i < n; i++) {
        x[i] <== (x[i-1] + a + i) * (x[i-1] - c + 3 * b) + 7;
        bit[i] <-- i % 3 == 0 ? 1 : 0;
        bit[i] * (bit[i] - 1) === 0;
    }
    bit[0] <-- 1;
    bit[0] * (bit[0] - 1) === zero;
    out <== x[n-1] * c;
    sum <== (a + b + c + 5) * (bit[0] + 2);
}

component main {public [c]} = Mix(12);
