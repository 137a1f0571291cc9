//! kpt with the image as the function (`KPT_FN_RUNTIME=podman`), `fn eval` and `fn render`,
//! against the native binary on copies of every package.

use super::*;

/// `kpt fn eval` of every package with `--exec` (native) and with `--image` (podman), each on its
/// own copy: the same files afterwards, byte for byte, the same exit code and the same results.
#[test]
fn kpt_fn_eval_image_matches_exec_on_every_package() {
    if !enabled("kpt_fn_eval_image_matches_exec_on_every_package") {
        return;
    }
    let scratch = scratch("kpt_fn_eval");
    // A logging podman shim proves kpt ran the image with --user nobody --network none.
    let shims = scratch.join("bin");
    let path = shim(&shims, "podman", &which("podman"));
    for (i, pkg) in packages().iter().enumerate() {
        let name = pkg.name();
        let (exec_dir, image_dir) = (
            scratch.join(format!("{i}-exec")),
            scratch.join(format!("{i}-image")),
        );
        copy_dir(&pkg.dir, &exec_dir);
        copy_dir(&pkg.dir, &image_dir);
        let eval = |dir: &Path, results: &Path, runtime: &[&str]| {
            let mut cmd = Command::new("kpt");
            cmd.args(["fn", "eval"])
                .arg(dir)
                .args(runtime)
                .arg("--results-dir")
                .arg(results)
                .env("KPT_FN_RUNTIME", "podman")
                .env("PATH", &path);
            if !pkg.args.is_empty() {
                cmd.arg("--").args(&pkg.args);
            } else if let Some(fc) = &pkg.fn_config {
                cmd.arg("--fn-config").arg(fc);
            }
            run(&mut cmd, b"")
        };
        let (exec_results, image_results) = (
            scratch.join(format!("{i}-exec-results")),
            scratch.join(format!("{i}-image-results")),
        );
        let by_exec = eval(&exec_dir, &exec_results, &["--exec", NATIVE]);
        let by_image = eval(
            &image_dir,
            &image_results,
            &["--image", IMAGE, "--image-pull-policy", "never"],
        );
        eprintln!("{name}: exit code {:?}", by_exec.status.code());
        assert_same_kpt_runs(
            &name,
            (&by_exec, &exec_dir, &exec_results),
            (&by_image, &image_dir, &image_results),
        );
    }
    assert_logged_runs(&shims.join("podman.log"), IMAGE);
    fs::remove_dir_all(&scratch).unwrap();
}

/// `kpt fn render` of every package with a Kptfile pipeline, twice: with the pipeline naming
/// `image: localhost/cutover:dev` (`KPT_FN_RUNTIME=podman`) and with it naming the native binary
/// (`exec:`). `exec: cutover` (the examples' form) and `image: localhost/cutover:dev` (the
/// `render-image` fixture) are rewritten into each other. Same files afterwards, same exit code,
/// same results.
#[test]
fn kpt_fn_render_image_matches_exec_on_every_package() {
    if !enabled("kpt_fn_render_image_matches_exec_on_every_package") {
        return;
    }
    let scratch = scratch("kpt_fn_render");
    let shims = scratch.join("bin");
    let path = shim(&shims, "podman", &which("podman"));
    let mut rendered_with_image = 0;
    for (i, pkg) in packages().iter().enumerate() {
        let name = pkg.name();
        let original = fs::read_to_string(pkg.dir.join("Kptfile")).unwrap();
        let image_kptfile = retarget(&original, &format!("image: {IMAGE}"));
        let exec_kptfile = retarget(&original, &format!("exec: {NATIVE}"));
        if !image_kptfile.contains(&format!("image: {IMAGE}")) {
            eprintln!("{name}: no cutover function in the Kptfile pipeline, not rendered");
            continue;
        }
        rendered_with_image += 1;
        let (image_dir, exec_dir) = (
            scratch
                .join(format!("{i}-image"))
                .join(pkg.dir.file_name().unwrap()),
            scratch
                .join(format!("{i}-exec"))
                .join(pkg.dir.file_name().unwrap()),
        );
        copy_dir(&pkg.dir, &image_dir);
        copy_dir(&pkg.dir, &exec_dir);
        fs::write(image_dir.join("Kptfile"), &image_kptfile).unwrap();
        fs::write(exec_dir.join("Kptfile"), &exec_kptfile).unwrap();
        let render = |dir: &Path, results: &Path, flags: &[&str]| {
            run(
                Command::new("kpt")
                    .args(["fn", "render"])
                    .arg(dir)
                    .args(flags)
                    .arg("--results-dir")
                    .arg(results)
                    .env("KPT_FN_RUNTIME", "podman")
                    .env("PATH", &path),
                b"",
            )
        };
        let (image_results, exec_results) = (
            scratch.join(format!("{i}-image-results")),
            scratch.join(format!("{i}-exec-results")),
        );
        let by_image = render(
            &image_dir,
            &image_results,
            &["--image-pull-policy", "never"],
        );
        let by_exec = render(&exec_dir, &exec_results, &["--allow-exec"]);
        eprintln!("{name}: render exit code {:?}", by_exec.status.code());
        // The Kptfiles differ by construction; everything else must not.
        fs::write(image_dir.join("Kptfile"), &original).unwrap();
        fs::write(exec_dir.join("Kptfile"), &original).unwrap();
        assert_same_kpt_runs(
            &name,
            (&by_exec, &exec_dir, &exec_results),
            (&by_image, &image_dir, &image_results),
        );
    }
    assert!(rendered_with_image > 0, "no package has a cutover pipeline");
    assert_logged_runs(&shims.join("podman.log"), IMAGE);
    fs::remove_dir_all(&scratch).unwrap();
}
