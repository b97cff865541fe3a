#pragma once
// The options form of one analysis method, generated from its registry record
// (core/analysis/framework/registry.h): what the method does and which paper it reproduces, the task it will
// run on, and one field per option with its default, range and help in the tooltip. The values a method was
// last run with are remembered per method (QSettings "methods/<name>/options"); Restore defaults resets the
// form.
#include <QDialog>

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

#include "analysis/framework/registry.h"

class QLabel;
class QPushButton;

namespace hs::gui {

class MethodDialog : public QDialog {
  Q_OBJECT
 public:
  // `task` describes the task the run will use; `taskProblem`, when not empty, says why the method cannot
  // run on it (Run is disabled then).
  MethodDialog(const MethodInfo& method, const QString& task, const QString& taskProblem,
               QWidget* parent = nullptr);

  // The form's values as the method's options (every option); throws hs::Error naming the field when one
  // does not parse or is out of range.
  nlohmann::json options() const;
  // Fills the form (keys the method does not have are ignored; missing keys keep their field).
  void setOptions(const nlohmann::json& options);
  void restoreDefaults();
  QWidget* field(const std::string& key) const;  // nullptr when the method has no such option
  QPushButton* runButton() const { return run_; }

  // The options `method` was last run with from the GUI (an empty object when none).
  static nlohmann::json remembered(const std::string& method);
  static void remember(const std::string& method, const nlohmann::json& options);

  void accept() override;  // checks the form first; an error is shown in the dialog and it stays open

 private:
  const MethodInfo& method_;
  std::vector<std::pair<OptionSpec, QWidget*>> fields_;
  QLabel* error_ = nullptr;
  QPushButton* run_ = nullptr;
};

}  // namespace hs::gui
