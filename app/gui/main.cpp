// headscope: the desktop workbench. `headscope [MODEL] [--tokenizer PATH]` opens MODEL on start.
#include <QApplication>
#include <QCommandLineParser>

#include "main_window.h"

int main(int argc, char** argv) {
  QApplication app(argc, argv);
  QApplication::setApplicationName("HeadScope");
  QApplication::setOrganizationName("HeadScope");
  QApplication::setApplicationVersion(HEADSCOPE_VERSION);
  QCommandLineParser parser;
  parser.setApplicationDescription("Interpretability workbench for in-context learning in transformers");
  parser.addHelpOption();
  parser.addVersionOption();
  parser.addPositionalArgument("model", "HF folder, llama2.c .bin or .gguf to open");
  QCommandLineOption tokenizer("tokenizer", "Tokenizer for the model (tokenizer.json, vocab.json, tok.bin)",
                               "path");
  parser.addOption(tokenizer);
  parser.process(app);

  hs::gui::MainWindow window;
  window.show();
  if (!parser.positionalArguments().isEmpty())
    window.openModel(parser.positionalArguments().first(), parser.value(tokenizer));
  return app.exec();
}
