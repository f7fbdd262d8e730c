//! The NTT kernels of any field run on the host (`BC_NTT_STEPS` of `bc/ntt.cuh`), chained by the
//! same `ntt::transform` as on the GPU.

use crate::error::Result;
use crate::ntt::{self, Field, Kernels, Ntt, Scaling, Twiddles};

/// One field's NTT kernels compiled for the host.
pub struct NttSteps {
    pub twiddles: unsafe extern "C" fn(*const u32, u64, *mut u32),
    pub pass: unsafe extern "C" fn(
        *mut u32,
        u32,
        u64,
        u32,
        u32,
        *const u32,
        u32,
        u32,
        u32,
        *const u32,
        *const u32,
        u32,
    ),
    pub bitrev:
        unsafe extern "C" fn(*const u32, *mut u32, u32, u64, u32, *const u32, *const u32, u32),
    pub mul_sub: unsafe extern "C" fn(*const u32, u64, *mut u32),
    pub products:
        unsafe extern "C" fn(*const u64, *const u32, *const u32, *const u32, u64, *mut u32),
}

/// A field's [`NttSteps`] from the names `BC_NTT_STEPS(PREFIX, F)` gives its kernels
/// (`PREFIX_ntt_twiddles`, `_pass`, `_bitrev`, `_mul_sub`, `_products`), declared here once: the
/// argument is the prefix, as for `msm_steps!`.
macro_rules! ntt_steps {
    ($prefix:literal) => {{
        extern "C" {
            #[link_name = concat!($prefix, "_ntt_twiddles")]
            fn twiddles(omega: *const u32, count: u64, out: *mut u32);
            #[link_name = concat!($prefix, "_ntt_pass")]
            fn pass(
                data: *mut u32,
                log_n: u32,
                batch: u64,
                stage0: u32,
                k: u32,
                tw: *const u32,
                tw_shift: u32,
                inverse: u32,
                mode: u32,
                lo: *const u32,
                hi: *const u32,
                lo_bits: u32,
            );
            #[link_name = concat!($prefix, "_ntt_bitrev")]
            fn bitrev(
                input: *const u32,
                out: *mut u32,
                log_n: u32,
                batch: u64,
                mode: u32,
                lo: *const u32,
                hi: *const u32,
                lo_bits: u32,
            );
            #[link_name = concat!($prefix, "_ntt_mul_sub")]
            fn mul_sub(abc: *const u32, n: u64, out: *mut u32);
            #[link_name = concat!($prefix, "_ntt_products")]
            fn products(
                starts: *const u64,
                cols: *const u32,
                coefs: *const u32,
                w: *const u32,
                n: u64,
                out: *mut u32,
            );
        }
        $crate::emulation::ntt::NttSteps {
            twiddles,
            pass,
            bitrev,
            mul_sub,
            products,
        }
    }};
}
pub(crate) use ntt_steps;

/// The steps on host buffers of raw limbs.
struct Host<F> {
    steps: NttSteps,
    field: std::marker::PhantomData<F>,
}

// SAFETY (every call below): `ntt::transform` sizes each buffer for the items the kernel walks.
impl<F: Field> Kernels<F> for Host<F> {
    type Elems = Vec<u32>;

    fn upload(&mut self, raw: &[u32]) -> Result<Vec<u32>> {
        Ok(raw.to_vec())
    }
    fn alloc(&mut self, len: u64) -> Result<Vec<u32>> {
        Ok(vec![0; F::WORDS * len.max(1) as usize])
    }
    fn twiddles(&mut self, omega: &Vec<u32>, count: u64, out: &mut Vec<u32>) -> Result<()> {
        unsafe { (self.steps.twiddles)(omega.as_ptr(), count, out.as_mut_ptr()) };
        Ok(())
    }
    fn pass(
        &mut self,
        data: &mut Vec<u32>,
        log_n: u32,
        batch: u64,
        stage0: u32,
        k: u32,
        tw: &Twiddles<Vec<u32>>,
        inverse: bool,
        sc: &Scaling<Vec<u32>>,
    ) -> Result<()> {
        unsafe {
            (self.steps.pass)(
                data.as_mut_ptr(),
                log_n,
                batch,
                stage0,
                k,
                tw.table.as_ptr(),
                tw.shift(log_n),
                u32::from(inverse),
                sc.mode as u32,
                sc.lo.as_ptr(),
                sc.hi.as_ptr(),
                sc.lo_bits,
            )
        };
        Ok(())
    }
    fn bitrev(
        &mut self,
        input: &Vec<u32>,
        out: &mut Vec<u32>,
        log_n: u32,
        batch: u64,
        sc: &Scaling<Vec<u32>>,
    ) -> Result<()> {
        unsafe {
            (self.steps.bitrev)(
                input.as_ptr(),
                out.as_mut_ptr(),
                log_n,
                batch,
                sc.mode as u32,
                sc.lo.as_ptr(),
                sc.hi.as_ptr(),
                sc.lo_bits,
            )
        };
        Ok(())
    }
}

/// `t` on each polynomial of `values` through `F`'s kernel code, with a twiddle table for
/// 2^`table_log` (at least the size: a larger table exercises the strided reads the GPU makes
/// when it keeps a table for a larger transform).
pub fn ntt<F: Field>(values: &mut [F], t: &Ntt<F>, table_log: u32) -> Result<()> {
    let mut words = crate::msm::raw_elements(values);
    ntt_words(&mut words, t, table_log)?;
    for (x, l) in values.iter_mut().zip(words.chunks_exact(F::WORDS)) {
        *x = F::from_limbs(l);
    }
    Ok(())
}

/// [`ntt`] on elements as words (`F::WORDS` each, below the modulus), in place, taken as the GPU
/// takes them: Montgomery limbs give Montgomery limbs, canonical words canonical ones.
pub fn ntt_words<F: Field>(words: &mut [u32], t: &Ntt<F>, table_log: u32) -> Result<()> {
    let len = words.len() / F::WORDS;
    let batch = t.batch_of(len)? as u64;
    if len == 0 || t.size == 1 {
        return Ok(());
    }
    let mut k = Host::<F> {
        steps: F::emulated(),
        field: std::marker::PhantomData,
    };
    let tw = Twiddles::build::<F, _>(&mut k, table_log.max(t.log_size()))?;
    let mut data = words.to_vec();
    let mut out = Kernels::<F>::alloc(&mut k, len as u64)?;
    ntt::transform(&mut k, &tw, t, batch, &mut data, &mut out)?;
    words.copy_from_slice(&out[..words.len()]);
    Ok(())
}

/// a[i] b[i] - c[i] for the three polynomials of `abc` (one after another) through `F`'s kernel.
pub fn mul_sub<F: Field>(abc: &[F]) -> Vec<F> {
    let n = abc.len() / 3;
    let raw = crate::msm::raw_elements(abc);
    let mut out = vec![0u32; F::WORDS * n];
    // SAFETY: `raw` holds 3n elements and `out` n, as the kernel reads and writes them.
    unsafe { (F::emulated().mul_sub)(raw.as_ptr(), n as u64, out.as_mut_ptr()) };
    out.chunks_exact(F::WORDS).map(F::from_limbs).collect()
}

/// `[A·w | B·w | (A·w)∘(B·w)]` through `F`'s kernel, for two sparse matrices by rows one after
/// another (`starts`: 2n + 1 offsets into `cols` and `coefs`).
pub fn products<F: Field>(starts: &[u64], cols: &[u32], coefs: &[F], w: &[F]) -> Vec<F> {
    let n = starts.len() / 2;
    assert!(starts.len() == 2 * n + 1 && starts[2 * n] as usize == cols.len());
    assert!(starts.windows(2).all(|p| p[0] <= p[1]));
    assert!(coefs.len() == cols.len() && cols.iter().all(|&c| (c as usize) < w.len()));
    let (coefs, w) = (crate::msm::raw_elements(coefs), crate::msm::raw_elements(w));
    let mut out = vec![0u32; 3 * F::WORDS * n];
    // SAFETY: checked above: every offset and signal indexes within the buffers, and `out`
    // holds the 3n elements the kernel writes.
    unsafe {
        (F::emulated().products)(
            starts.as_ptr(),
            cols.as_ptr(),
            coefs.as_ptr(),
            w.as_ptr(),
            n as u64,
            out.as_mut_ptr(),
        )
    };
    out.chunks_exact(F::WORDS).map(F::from_limbs).collect()
}
