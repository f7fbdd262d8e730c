//! The BN254 MSM and NTT kernels run on the host: the groups' MSM steps (for
//! [`super::msm::msm`]) and the transforms, chained by the same `ntt::transform` as on the GPU.

use super::msm::MsmSteps;
use crate::bn254::ntt::{self, Ntt, Scaling, Twiddles};
use crate::bn254::Fr;
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

/// G1's MSM kernels.
pub const G1_MSM: MsmSteps = MsmSteps {
    digits: bn254_msm_digits,
    scan_tiles: bn254_msm_scan_tiles,
    scan_add: bn254_msm_scan_add,
    scatter: bn254_msm_scatter,
    accumulate_points: bn254_g1_msm_accumulate_points,
    accumulate_partials: bn254_g1_msm_accumulate_partials,
    window_segments: bn254_g1_msm_window_segments,
    sum_groups: bn254_g1_msm_sum_groups,
    shift_bases: bn254_g1_msm_shift_bases,
};

/// G2's MSM kernels (coordinates in Fq2: c0 then c1).
pub const G2_MSM: MsmSteps = MsmSteps {
    digits: bn254_msm_digits,
    scan_tiles: bn254_msm_scan_tiles,
    scan_add: bn254_msm_scan_add,
    scatter: bn254_msm_scatter,
    accumulate_points: bn254_g2_msm_accumulate_points,
    accumulate_partials: bn254_g2_msm_accumulate_partials,
    window_segments: bn254_g2_msm_window_segments,
    sum_groups: bn254_g2_msm_sum_groups,
    shift_bases: bn254_g2_msm_shift_bases,
};

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
    let mut data = crate::msm::raw_elements(values);
    let mut out = ntt::Kernels::alloc(&mut k, values.len() as u64)?;
    ntt::transform(&mut k, &tw, t, batch, &mut data, &mut out)?;
    for (x, l) in values.iter_mut().zip(out.chunks_exact(8)) {
        *x = crate::msm::Limbs::from_limbs(l);
    }
    Ok(())
}
