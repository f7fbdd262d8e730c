//! A saved calibration: what one engine measured, an engine made later starts from without
//! measuring; `batchcrypt calibrate`'s engine and `BATCHCRYPT_CALIBRATION=off` ignore it.

use batchcrypt::calibration::CALIBRATION_ENV;
use batchcrypt::dispatch::Location;
use batchcrypt::{BackendChoice, Engine};

// One test in this binary: the variable is the process's.
#[test]
fn later_engines_start_from_a_saved_calibration() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("sub").join("calibration.json");
    std::env::set_var(CALIBRATION_ENV, &file);
    let auto = || Engine::with_backend(BackendChoice::Auto);
    assert!(
        auto().dispatcher().measured().is_empty(),
        "nothing saved yet"
    );

    let cal = Engine::calibrating(BackendChoice::Auto);
    let op = batchcrypt::registry::REGISTRY[0];
    let [cpu, _] = cal.estimates(op, 1 << 12, Location::Host);
    assert!(cpu.estimate_s.is_some(), "the CPU was measured");
    let measured = cal.dispatcher().measurements();
    assert!(!measured.costs.is_empty());
    assert_eq!(cal.save_calibration().unwrap(), file);

    let later = auto();
    assert_eq!(
        later.dispatcher().measurements(),
        measured,
        "a later engine holds exactly what was saved"
    );
    assert_eq!(
        later.estimates(op, 1 << 12, Location::Host)[0].estimate_s,
        cpu.estimate_s,
        "and estimates from it"
    );
    assert!(
        Engine::calibrating(BackendChoice::Auto)
            .dispatcher()
            .measured()
            .is_empty(),
        "calibrating measures afresh"
    );

    std::env::set_var(CALIBRATION_ENV, "off");
    assert!(auto().dispatcher().measured().is_empty(), "off: not read");
    assert!(cal.save_calibration().is_err(), "off: not written");

    // A damaged file is ignored, not an error.
    std::env::set_var(CALIBRATION_ENV, &file);
    std::fs::write(&file, "{\"machine\": 1").unwrap();
    assert!(auto().dispatcher().measured().is_empty());
}
