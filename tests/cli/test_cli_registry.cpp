// The CLI is generated from the method registry: a method registered at run time becomes a command whose
// --help lists its options with defaults and ranges and whose run lands in a session with its record;
// every command's --help shows every option's default; the man page, generated from the registry, documents
// exactly the CLI's commands and only flags they have.
#include <QTemporaryDir>
#include <QtTest>

#include <algorithm>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>

#include "cli_common.h"
#include "man_page.h"
#include "session/session.h"
#include "test_method.h"
#include "test_paths.h"
#include "util/file_text.h"

namespace {

// Parses a command line into a freshly built app (the way headscope-cli's main does).
void runArgs(CLI::App& app, std::vector<std::string> args) {
  std::vector<char*> argv = {const_cast<char*>("headscope-cli")};
  for (std::string& a : args)
    argv.push_back(a.data());
  app.parse(static_cast<int>(argv.size()), argv.data());
}

std::string helpOf(CLI::App& app, const std::string& command) {
  return app.get_subcommand(command)->help();
}

}  // namespace

class TestCliRegistry : public QObject {
  Q_OBJECT
  QTemporaryDir dir_;

 private Q_SLOTS:
  void initTestCase() {
    QVERIFY(dir_.isValid());
    hs::test::registerEchoMethod();
  }

  void registeredMethodIsACommand() {
    CLI::App app;
    hs::cli::buildCli(app);
    const std::string help = helpOf(app, "echo");
    for (const char* expect :
         {"--k INT=3", "range [1, 10]", "--scale REAL=0.5", "--mode CHOICE:{plain,doubled}=plain",
          "--absolute", "--no-absolute", "--heads L.H,...=none", "--seed INT=7", "--out", "--json",
          "--run-id", "random prompts averaged", "mean output size"})
      QVERIFY2(help.find(expect) != std::string::npos, (std::string(expect) + " not in:\n" + help).c_str());
    // A method without a task has no task options.
    QVERIFY(help.find("--shots") == std::string::npos);
    QVERIFY(helpOf(app, "tsla").find("--shots") != std::string::npos);
  }

  void registeredMethodRunsIntoASession() {
    CLI::App app;
    hs::cli::buildCli(app);
    const std::string out = dir_.filePath("echo.hscope").toStdString();
    runArgs(app, {"echo", "toy", "--k", "2", "--mode", "doubled", "--heads", "1.2", "--no-absolute",
                  "--run-id", "echo-x", "--out", out});
    const hs::Session s = hs::loadSession(out);
    QCOMPARE(s.runs.size(), size_t(1));
    const hs::AnalysisRun& r = s.runs[0];
    QCOMPARE(r.id, std::string("echo-x"));
    QCOMPARE(r.method, std::string("echo"));
    QCOMPARE(r.options.at("k").get<int>(), 2);
    QCOMPARE(r.options.at("mode").get<std::string>(), std::string("doubled"));
    QCOMPARE(r.options.at("absolute").get<bool>(), false);
    QCOMPARE(r.options.at("heads"), (nlohmann::json{{1, 2}}));
    QCOMPARE(r.provenance.model, std::string("toy"));  // not the source tree's path
    QCOMPARE(r.grids.at(0).values(1, 2), 0.0);
    QCOMPARE(s.model.at("path").get<std::string>(), std::string("toy"));
    QVERIFY(s.methods.contains("echo"));
    // Its six options and the registry's seeds and seeds_top_k (it has a seed option: seeds.h).
    QCOMPARE(s.methods.at("echo").at("options").size(), size_t(8));
    QVERIFY(s.tensors.count("echo-x/values"));
  }

  void badOptionValuesAreRefusedBeforeLoading() {
    CLI::App app;
    hs::cli::buildCli(app);
    const std::string out = dir_.filePath("never.hscope").toStdString();
    for (const auto& [args, needle] : std::vector<std::pair<std::vector<std::string>, std::string>>{
             {{"echo", "toy", "--k", "11", "--out", out},
              "echo: option k = 11: expected a whole number in [1, 10]"},
             {{"echo", "toy", "--k", "two", "--out", out}, "--k: 'two' is not a whole number"},
             {{"echo", "toy", "--heads", "1:2", "--out", out}, "--heads: '1:2' is not a list of heads"},
             {{"evaluate", "toy", "--zero-ablate", "3.3", "--mean-ablate", "3.3", "--out", out},
              "head 3.3 has two interventions (zero_ablate and mean_ablate)"},
             {{"geometry", "toy", "--task", "toy:antonym_a", "--out", out},
              "geometry needs a classification task"}}) {
      CLI::App fresh;
      hs::cli::buildCli(fresh);
      std::string message;
      try {
        runArgs(fresh, args);
      } catch (const std::exception& e) {
        message = e.what();
      }
      QVERIFY2(message.find(needle) != std::string::npos, ("got: " + message).c_str());
    }
    QVERIFY(!std::filesystem::exists(out));
  }

  // Every option of every command shows its default in --help (flags, positionals and required options
  // excepted: they have none).
  void everyOptionShowsItsDefault() {
    CLI::App app;
    hs::cli::buildCli(app);
    int checked = 0;
    for (const CLI::App* cmd : app.get_subcommands({})) {
      for (const CLI::Option* o : cmd->get_options()) {
        if (o->get_positional() || o->get_required() || o->get_expected_min() == 0 ||
            o->get_name() == "--help")
          continue;
        QVERIFY2(!o->get_default_str().empty(),
                 (cmd->get_name() + " " + o->get_name() + " shows no default").c_str());
        ++checked;
      }
    }
    QVERIFY(checked > 100);
  }

  // The man page (its method commands generated from the registry, man_page.h) documents exactly the CLI's
  // commands, the method registered at run time included, and every flag it names exists: on the command
  // whose section names it, or for the program as a whole.
  void manPageDocumentsEveryCommandAndOnlyRealFlags() {
    const std::string page =
        hs::cli::renderManPage(hs::readTextFile(hs::test::sourceDir("packaging/man/headscope-cli.1.in")));
    CLI::App app;
    hs::cli::buildCli(app);
    std::map<std::string, std::set<std::string>> flags;  // command ("" for the program) → its long flags
    auto addFlags = [&](const CLI::App& a, const std::string& command) {
      for (const CLI::Option* o : a.get_options())
        for (const std::string& name : o->get_lnames())
          flags[command].insert("--" + name);
    };
    addFlags(app, "");
    flags[""].insert("--version");
    std::set<std::string> commands;
    for (const CLI::App* cmd : app.get_subcommands({})) {
      commands.insert(cmd->get_name());
      addFlags(*cmd, cmd->get_name());
    }
    std::set<std::string> documented;
    std::string section;  // the command whose .SS section a line is in ("" outside them)
    int checked = 0;
    const std::regex ss("^\\.SS \"([a-z][a-z-]*)"), flag("\\\\-\\\\-([a-z0-9][a-z0-9_\\\\-]*)");
    std::istringstream lines(page);
    for (std::string line; std::getline(lines, line);) {
      std::smatch m;
      if (line.rfind(".SH ", 0) == 0) section.clear();
      if (std::regex_search(line, m, ss)) documented.insert(section = m[1]);
      for (std::sregex_iterator it(line.begin(), line.end(), flag), end; it != end; ++it) {
        std::string f = "--" + std::regex_replace((*it)[1].str(), std::regex("\\\\-"), "-");
        if (f.find('_') != std::string::npos) continue;  // another tool's flag quoted in a help text
        const std::string positive = f.rfind("--no-", 0) == 0 ? "--" + f.substr(5) : f;
        const bool known = flags[section].count(f) || flags[section].count(positive) || flags[""].count(f) ||
                           (section.empty() && std::any_of(flags.begin(), flags.end(), [&](const auto& c) {
                              return c.second.count(f) > 0;
                            }));
        QVERIFY2(known, ("the man page names " + f + (section.empty() ? "" : " under " + section) +
                         ", which the CLI does not have")
                            .c_str());
        ++checked;
      }
    }
    QCOMPARE(documented, commands);  // "echo", registered by this test, included
    QVERIFY(checked > 200);
    QVERIFY(page.find("random prompts averaged") != std::string::npos);  // echo's help text
  }
};

QTEST_GUILESS_MAIN(TestCliRegistry)
#include "test_cli_registry.moc"
