//! The BN254 MSM and NTT kernels run on the host, chained by the same `msm::window_sums` and
//! `ntt::transform` as on the GPU.

use crate::bn254::msm::{self, Kernels, Shape, SLICE};
use crate::bn254::ntt::{self, Ntt, Scaling, Twiddles};
use crate::bn254::{Affine, Fr, Group, Projective};
use crate::error::Result;

extern "C" {
    fn bn254_msm_digits(
        scalars: *const u32,
        n: u64,
        c: u32,
        windows: u32,
        sets: u32,
        digits: *mut u32,
        counts: *mut u32,
    );
    fn bn254_msm_scan_tiles(data: *mut u32, m: u64, tile: u32, totals: *mut u32);
    fn bn254_msm_scan_add(data: *mut u32, m: u64, tile: u32, offsets: *const u32);
    fn bn254_msm_scatter(
        digits: *const u32,
        n: u64,
        c: u32,
        windows: u32,
        sets: u32,
        stride: u32,
        cursor: *mut u32,
        entries: *mut u32,
        keys: *mut u32,
    );
    fn bn254_g1_msm_accumulate_points(
        bases: *const u32,
        entries: *const u32,
        keys: *const u32,
        total: u64,
        slice: u32,
        buckets: *mut u32,
        next_keys: *mut u32,
        next_pts: *mut u32,
    );
    fn bn254_g1_msm_accumulate_partials(
        pts: *const u32,
        keys: *const u32,
        total: u64,
        slice: u32,
        buckets: *mut u32,
        next_keys: *mut u32,
        next_pts: *mut u32,
    );
    fn bn254_g1_msm_window_segments(
        buckets: *const u32,
        per_window: u32,
        windows: u32,
        per: u32,
        out: *mut u32,
    );
    fn bn254_g1_msm_sum_groups(input: *const u32, groups: u64, m: u32, out: *mut u32);
    fn bn254_g1_msm_shift_bases(input: *const u32, n: u64, doublings: u32, out: *mut u32);
    fn bn254_g2_msm_accumulate_points(
        bases: *const u32,
        entries: *const u32,
        keys: *const u32,
        total: u64,
        slice: u32,
        buckets: *mut u32,
        next_keys: *mut u32,
        next_pts: *mut u32,
    );
    fn bn254_g2_msm_accumulate_partials(
        pts: *const u32,
        keys: *const u32,
        total: u64,
        slice: u32,
        buckets: *mut u32,
        next_keys: *mut u32,
        next_pts: *mut u32,
    );
    fn bn254_g2_msm_window_segments(
        buckets: *const u32,
        per_window: u32,
        windows: u32,
        per: u32,
        out: *mut u32,
    );
    fn bn254_g2_msm_sum_groups(input: *const u32, groups: u64, m: u32, out: *mut u32);
    fn bn254_g2_msm_shift_bases(input: *const u32, n: u64, doublings: u32, out: *mut u32);
    fn bn254_ntt_twiddles(omega: *const u32, count: u64, out: *mut u32);
    fn bn254_ntt_pass(
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
    fn bn254_ntt_bitrev(
        input: *const u32,
        out: *mut u32,
        log_n: u32,
        batch: u64,
        mode: u32,
        lo: *const u32,
        hi: *const u32,
        lo_bits: u32,
    );
}

/// One group's point steps (the kernels instantiated for it): [`steps`].
#[doc(hidden)]
pub struct PointSteps {
    accumulate_points: unsafe extern "C" fn(
        *const u32,
        *const u32,
        *const u32,
        u64,
        u32,
        *mut u32,
        *mut u32,
        *mut u32,
    ),
    accumulate_partials:
        unsafe extern "C" fn(*const u32, *const u32, u64, u32, *mut u32, *mut u32, *mut u32),
    window_segments: unsafe extern "C" fn(*const u32, u32, u32, u32, *mut u32),
    sum_groups: unsafe extern "C" fn(*const u32, u64, u32, *mut u32),
    shift_bases: unsafe extern "C" fn(*const u32, u64, u32, *mut u32),
}

/// The point steps of group `P` (G1's base field is Fq, G2's Fq2).
fn steps<P: Group>() -> PointSteps {
    match P::DEGREE {
        1 => G1_STEPS,
        _ => G2_STEPS,
    }
}

pub(crate) const G1_STEPS: PointSteps = PointSteps {
    accumulate_points: bn254_g1_msm_accumulate_points,
    accumulate_partials: bn254_g1_msm_accumulate_partials,
    window_segments: bn254_g1_msm_window_segments,
    sum_groups: bn254_g1_msm_sum_groups,
    shift_bases: bn254_g1_msm_shift_bases,
};

pub(crate) const G2_STEPS: PointSteps = PointSteps {
    accumulate_points: bn254_g2_msm_accumulate_points,
    accumulate_partials: bn254_g2_msm_accumulate_partials,
    window_segments: bn254_g2_msm_window_segments,
    sum_groups: bn254_g2_msm_sum_groups,
    shift_bases: bn254_g2_msm_shift_bases,
};

struct Host<'a> {
    bases: &'a [u32],
    steps: PointSteps,
    point_words: usize,
}

// SAFETY (every call below): `msm::window_sums` sizes each buffer for the items the kernel walks,
// as on the GPU.
impl Kernels for Host<'_> {
    type Words = Vec<u32>;
    type Points = Vec<u32>;

    fn words(&mut self, len: u64, _zeroed: bool) -> Result<Vec<u32>> {
        Ok(vec![0; len.max(1) as usize])
    }
    fn points(&mut self, len: u64, _zeroed: bool) -> Result<Vec<u32>> {
        Ok(vec![0; len.max(1) as usize * self.point_words])
    }
    fn digits(
        &mut self,
        scalars: &Vec<u32>,
        s: &Shape,
        digits: &mut Vec<u32>,
        counts: &mut Vec<u32>,
    ) -> Result<()> {
        unsafe {
            bn254_msm_digits(
                scalars.as_ptr(),
                s.n as u64,
                s.c,
                s.windows,
                s.sets,
                digits.as_mut_ptr(),
                counts.as_mut_ptr(),
            )
        };
        Ok(())
    }
    fn scan_tiles(
        &mut self,
        data: &mut Vec<u32>,
        m: u64,
        tile: u32,
        totals: &mut Vec<u32>,
    ) -> Result<()> {
        unsafe { bn254_msm_scan_tiles(data.as_mut_ptr(), m, tile, totals.as_mut_ptr()) };
        Ok(())
    }
    fn scan_add(
        &mut self,
        data: &mut Vec<u32>,
        m: u64,
        tile: u32,
        offsets: &Vec<u32>,
    ) -> Result<()> {
        unsafe { bn254_msm_scan_add(data.as_mut_ptr(), m, tile, offsets.as_ptr()) };
        Ok(())
    }
    fn first_word(&mut self, w: &Vec<u32>) -> Result<u32> {
        Ok(w[0])
    }
    fn scatter(
        &mut self,
        digits: &Vec<u32>,
        s: &Shape,
        cursor: &mut Vec<u32>,
        entries: &mut Vec<u32>,
        keys: &mut Vec<u32>,
    ) -> Result<()> {
        unsafe {
            bn254_msm_scatter(
                digits.as_ptr(),
                s.n as u64,
                s.c,
                s.windows,
                s.sets,
                s.stride as u32,
                cursor.as_mut_ptr(),
                entries.as_mut_ptr(),
                keys.as_mut_ptr(),
            )
        };
        Ok(())
    }
    fn accumulate_points(
        &mut self,
        entries: &Vec<u32>,
        keys: &Vec<u32>,
        total: u64,
        buckets: &mut Vec<u32>,
        next: &mut (Vec<u32>, Vec<u32>),
    ) -> Result<()> {
        unsafe {
            (self.steps.accumulate_points)(
                self.bases.as_ptr(),
                entries.as_ptr(),
                keys.as_ptr(),
                total,
                SLICE,
                buckets.as_mut_ptr(),
                next.0.as_mut_ptr(),
                next.1.as_mut_ptr(),
            )
        };
        Ok(())
    }
    fn accumulate_partials(
        &mut self,
        from: &(Vec<u32>, Vec<u32>),
        total: u64,
        buckets: &mut Vec<u32>,
        next: &mut (Vec<u32>, Vec<u32>),
    ) -> Result<()> {
        unsafe {
            (self.steps.accumulate_partials)(
                from.1.as_ptr(),
                from.0.as_ptr(),
                total,
                SLICE,
                buckets.as_mut_ptr(),
                next.0.as_mut_ptr(),
                next.1.as_mut_ptr(),
            )
        };
        Ok(())
    }
    fn window_segments(&mut self, buckets: &Vec<u32>, s: &Shape, out: &mut Vec<u32>) -> Result<()> {
        unsafe {
            (self.steps.window_segments)(
                buckets.as_ptr(),
                s.buckets_per_window(),
                s.sets,
                s.segment(),
                out.as_mut_ptr(),
            )
        };
        Ok(())
    }
    fn sum_groups(
        &mut self,
        input: &Vec<u32>,
        groups: u64,
        m: u32,
        out: &mut Vec<u32>,
    ) -> Result<()> {
        unsafe { (self.steps.sum_groups)(input.as_ptr(), groups, m, out.as_mut_ptr()) };
        Ok(())
    }
    fn read_points(&mut self, p: &Vec<u32>, len: usize) -> Result<Vec<u32>> {
        Ok(p[..len * self.point_words].to_vec())
    }
}

/// `sum scalars[i] * bases[i]` on G1 or G2 through the kernel code, with a given window size
/// (`None`: the one the GPU path would pick) and `copies` precomputed copies of the bases (1:
/// none), computed by the kernel code too.
pub fn msm<P: Group>(
    bases: &[Affine<P>],
    scalars: &[Fr],
    window: Option<u32>,
    copies: u32,
) -> Result<Projective<P>> {
    use crate::bn254::{point_words, raw_bases, raw_scalars, SCALAR_BITS};
    let (n, len) = (scalars.len(), bases.len());
    let s = match window {
        Some(c) => Shape::precomputed(n, SCALAR_BITS, c, copies, len)?,
        None => Shape::for_bases(n, len, copies, SCALAR_BITS)?,
    };
    let steps = steps::<P>();
    let one = raw_bases(bases);
    let mut raw = vec![0u32; one.len() * s.copies() as usize];
    raw[..one.len()].copy_from_slice(&one);
    for j in 1..s.copies() as usize {
        let (prev, next) = raw.split_at_mut(j * one.len());
        // SAFETY: copy j - 1 and copy j hold `len` points each.
        unsafe {
            (steps.shift_bases)(
                prev[(j - 1) * one.len()..].as_ptr(),
                len as u64,
                s.shift(),
                next.as_mut_ptr(),
            )
        };
    }
    let mut host = Host {
        bases: &raw,
        steps,
        point_words: point_words::<P>(),
    };
    let sums = msm::window_sums(&mut host, &s, &raw_scalars(scalars))?;
    Ok(crate::bn254::combine_windows::<P>(&sums, s.c))
}

/// The NTT steps on host buffers of raw limbs.
struct NttHost;

// SAFETY (every call below): `ntt::transform` sizes each buffer for the items the kernel walks.
impl ntt::Kernels for NttHost {
    type Elems = Vec<u32>;

    fn upload(&mut self, raw: &[u32]) -> Result<Vec<u32>> {
        Ok(raw.to_vec())
    }
    fn alloc(&mut self, len: u64) -> Result<Vec<u32>> {
        Ok(vec![0; 8 * len.max(1) as usize])
    }
    fn twiddles(&mut self, omega: &Vec<u32>, count: u64, out: &mut Vec<u32>) -> Result<()> {
        unsafe { bn254_ntt_twiddles(omega.as_ptr(), count, out.as_mut_ptr()) };
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
            bn254_ntt_pass(
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
            bn254_ntt_bitrev(
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

/// `t` on each polynomial of `values` through the kernel code, with a twiddle table for
/// 2^`table_log` (at least the size: a larger table exercises the strided reads the GPU makes
/// when it keeps a table for a larger transform).
pub fn ntt(values: &mut [Fr], t: &Ntt, table_log: u32) -> Result<()> {
    let batch = t.batch_of(values.len())? as u64;
    if values.is_empty() || t.size == 1 {
        return Ok(());
    }
    let mut k = NttHost;
    let tw = Twiddles::build(&mut k, table_log.max(t.log_size()))?;
    let mut data = crate::bn254::raw_scalars(values);
    let mut out = ntt::Kernels::alloc(&mut k, values.len() as u64)?;
    ntt::transform(&mut k, &tw, t, batch, &mut data, &mut out)?;
    for (x, l) in values.iter_mut().zip(out.chunks_exact(8)) {
        *x = crate::bn254::fr_from_limbs(l);
    }
    Ok(())
}
