// scripts/gpu_check/gpu_check.py and its probe, run on the CPU against the real transformers of the reference
// environment (every family the script checks), or, on a machine without it, against a stand-in for
// transformers' Llama (transformers_standin/: HF's module layout and o_proj pre-hooks over the independent
// reference forward). The GPU run happens rarely and once; this keeps the comparisons it will make honest in
// between: the probe's logits match transformers' (float32 within 1e-4, bfloat16 within the script's bound),
// the fast sweep's grid matches the naive hooked loop (same corrupt prompt, metric and patch site on both
// sides), and the timing step produces its figures.
#include <QProcess>
#include <QTemporaryDir>
#include <QtTest>

#include <nlohmann/json.hpp>
#include <string>

#include "load_test_util.h"
#include "reference_env.h"
#include "test_paths.h"

using nlohmann::json;

class TestGpuCheckDryRun : public QObject {
  Q_OBJECT
 private Q_SLOTS:
  void comparisonsHoldOnTheCpu() {
    // The real transformers where the reference environment is installed; the stand-in only without it.
    const bool real = hs::test::referenceEnvUsable(nullptr);
    if (!real) {
      if (hs::test::referenceRequired()) HS_REQUIRE_REFERENCE_ENV();  // fails, saying why
      HS_REQUIRE_REFERENCE_PYTHON();
    }
    QTemporaryDir out;
    QVERIFY(out.isValid());
    const QString models = out.filePath("models");
    QProcess p;
    p.setWorkingDirectory(QString::fromStdString(hs::test::sourceDir("")));
    QProcessEnvironment env = hs::test::referenceProcessEnvironment();
    if (!real) {
      env = QProcessEnvironment::systemEnvironment();
      env.insert("PYTHONPATH",
                 QString::fromStdString(hs::test::sourceDir("tests/gpu_check/transformers_standin")));
      env.insert("PYTHONDONTWRITEBYTECODE", "1");
    }
    p.setProcessEnvironment(env);
    p.start(QString::fromStdString(real ? hs::test::referenceVenvPython() : hs::test::referencePython()),
            {"scripts/gpu_check/gpu_check.py", "--device", "cpu", "--probe", HS_GPU_PROBE, "--cli",
             QString::fromStdString(hs::test::cliPath()), "--out", out.path(), "--timing-model",
             models + "/llama"});
    QVERIFY(p.waitForFinished(600000));
    const QByteArray err = p.readAllStandardError();
    QVERIFY2(p.exitStatus() == QProcess::NormalExit && p.exitCode() == 0, err.constData());
    QFile f(out.filePath("gpu_check.json"));
    QVERIFY(f.open(QIODevice::ReadOnly));
    const json r = json::parse(f.readAll().toStdString());
    const std::string all = r.dump(1);

    const std::string transformers =
        r.at("transformers").is_string() ? r.at("transformers").get<std::string>() : "";
    if (real)
      QVERIFY2(!transformers.empty() && transformers != "dry-run stand-in", all.c_str());
    else
      QCOMPARE(transformers, std::string("dry-run stand-in"));
    for (auto it = r.begin(); it != r.end(); ++it)  // no step may fail
      QVERIFY2(it.key().find("_error") == std::string::npos, all.c_str());

    // The stand-in knows Llama only; the real transformers must build and match every family of the script.
    const json& families = r.at("families");
    QVERIFY2(real ? families.size() >= 9 : families.contains("llama"), all.c_str());
    for (auto it = families.begin(); it != families.end(); ++it) {
      if (!real && it.key() != "llama") continue;
      const json& f = it.value();
      QVERIFY2(f.contains("f32") && f.at("f32").value("pass", false) &&
                   f.at("f32").value("max_abs_diff", 1.0) <= 1e-4,
               qPrintable(QString::fromStdString(it.key() + " float32: " + f.dump())));
      QVERIFY2(f.contains("bf16") && f.at("bf16").value("pass", false),
               qPrintable(QString::fromStdString(it.key() + " bfloat16: " + f.dump())));
    }

    const json& sweep = r.at("sweep_parity");
    QCOMPARE(sweep.at("heads").get<int>(), 12);
    QVERIFY2(sweep.at("pass").get<bool>() && sweep.at("max_abs_effect").get<double>() >= 1e-4, all.c_str());

    QCOMPARE(r.at("device_map").at("skipped").get<std::string>(), std::string("needs CUDA"));

    const json& t = r.at("llama_3_2_1b_bf16");
    QVERIFY2(t.at("ours").at("forward_s").get<double>() > 0 &&
                 t.at("ours").at("sweep_heads").get<int>() == 12 &&
                 t.at("transformers_naive_sweep_s").get<double>() > 0,
             all.c_str());
  }

  // The dry run takes the CPU branches; the step that frees GPU memory between families is CUDA-only. A CPU
  // torch makes torch.cuda.empty_cache a no-op, so the script's helper must return here as it will there.
  void gpuCacheReleaseReturns() {
    HS_REQUIRE_REFERENCE_PYTHON();
    QProcess p;
    p.setWorkingDirectory(QString::fromStdString(hs::test::sourceDir("")));
    QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
    env.insert("PYTHONDONTWRITEBYTECODE", "1");
    p.setProcessEnvironment(env);
    p.start(QString::fromStdString(hs::test::referencePython()),
            {"-c",
             "import sys; sys.path.insert(0, 'scripts/gpu_check'); import gpu_check as g; "
             "assert g.DEVICE == 'cuda'; g.free_cache()"});
    QVERIFY(p.waitForFinished(120000));
    QVERIFY2(p.exitStatus() == QProcess::NormalExit && p.exitCode() == 0,
             p.readAllStandardError().constData());
  }
};

QTEST_GUILESS_MAIN(TestGpuCheckDryRun)
#include "test_gpu_check_dry_run.moc"
