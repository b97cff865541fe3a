#include "method_dialog.h"

#include <QCheckBox>
#include <QComboBox>
#include <QDialogButtonBox>
#include <QDoubleValidator>
#include <QFileDialog>
#include <QFormLayout>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QPushButton>
#include <QScrollArea>
#include <QSettings>
#include <QSpinBox>
#include <QVBoxLayout>

#include <climits>
#include <cmath>

#include "util/error.h"

namespace hs::gui {
namespace {

QString q(const std::string& s) {
  return QString::fromStdString(s);
}

QString tooltipOf(const OptionSpec& o) {
  QString t = q(o.help).toHtmlEscaped() + "<br><br>default: <b>" +
              q(o.defaultText().empty() ? "(empty)" : o.defaultText()).toHtmlEscaped() + "</b>";
  if (!o.rangeText().empty()) t += "<br>range: " + q(o.rangeText()).toHtmlEscaped();
  t += "<br>CLI: <tt>" + q(o.cliFlag()) + "</tt>";
  return t;
}

int boundOf(const std::optional<double>& v, int fallback) {
  if (!v) return fallback;
  return static_cast<int>(std::max<double>(INT_MIN, std::min<double>(INT_MAX, *v)));
}

QWidget* makeField(const OptionSpec& o) {
  switch (o.type) {
    case OptionType::Int: {
      auto* w = new QSpinBox;
      const int lo = boundOf(o.check.min, INT_MIN);
      w->setRange(o.check.min_open && lo < INT_MAX ? lo + 1 : lo, boundOf(o.check.max, INT_MAX));
      return w;
    }
    case OptionType::Bool:
      return new QCheckBox;
    case OptionType::Choice: {
      auto* w = new QComboBox;
      for (const std::string& c : o.check.choices)
        w->addItem(q(c));
      return w;
    }
    case OptionType::File: {
      auto* box = new QWidget;
      auto* l = new QHBoxLayout(box);
      l->setContentsMargins(0, 0, 0, 0);
      auto* edit = new QLineEdit;
      edit->setObjectName("value");
      auto* browse = new QPushButton("…");
      browse->setMaximumWidth(32);
      QObject::connect(browse, &QPushButton::clicked, box, [box, edit] {
        const QString f = QFileDialog::getOpenFileName(box, "Choose a file", edit->text());
        if (!f.isEmpty()) edit->setText(f);
      });
      l->addWidget(edit, 1);
      l->addWidget(browse);
      return box;
    }
    case OptionType::Real: {
      auto* w = new QLineEdit;
      w->setValidator(new QDoubleValidator(w));
      return w;
    }
    case OptionType::Text:
    case OptionType::IntList:
    case OptionType::HeadList: {
      auto* w = new QLineEdit;
      if (o.type == OptionType::IntList) w->setPlaceholderText("1,2,4");
      if (o.type == OptionType::HeadList) w->setPlaceholderText("3.0,3.5");
      return w;
    }
  }
  return new QLineEdit;
}

QLineEdit* lineEditOf(QWidget* w) {
  if (auto* e = qobject_cast<QLineEdit*>(w)) return e;
  return w->findChild<QLineEdit*>("value");
}

void setField(const OptionSpec& o, QWidget* w, const nlohmann::json& v) {
  if (auto* s = qobject_cast<QSpinBox*>(w)) {
    s->setValue(static_cast<int>(v.get<double>()));
  } else if (auto* c = qobject_cast<QCheckBox*>(w)) {
    c->setChecked(v.get<bool>());
  } else if (auto* b = qobject_cast<QComboBox*>(w)) {
    b->setCurrentIndex(std::max(0, b->findText(q(v.get<std::string>()))));
  } else if (QLineEdit* e = lineEditOf(w)) {
    e->setText(q(optionText(o, v)));
  }
}

nlohmann::json valueOf(const OptionSpec& o, QWidget* w) {
  if (auto* s = qobject_cast<QSpinBox*>(w)) return s->value();
  if (auto* c = qobject_cast<QCheckBox*>(w)) return c->isChecked();
  if (auto* b = qobject_cast<QComboBox*>(w)) return b->currentText().toStdString();
  return parseOptionText(o, lineEditOf(w)->text().trimmed().toStdString());
}

QString settingsKey(const std::string& method) {
  return "methods/" + q(method) + "/options";
}

}  // namespace

MethodDialog::MethodDialog(const MethodInfo& method, const QString& task, const QString& taskProblem,
                           QWidget* parent)
    : QDialog(parent), method_(method) {
  setWindowTitle("Run " + q(method.title));
  auto* layout = new QVBoxLayout(this);
  auto* about = new QLabel(
      "<b>" + q(method.title).toHtmlEscaped() + "</b><br>" + q(method.description).toHtmlEscaped() +
      (method.paper.empty() ? QString() : "<br><i>" + q(method.paper).toHtmlEscaped() + "</i>"));
  about->setWordWrap(true);
  about->setTextFormat(Qt::RichText);
  layout->addWidget(about);
  if (method.takesTask()) {
    auto* taskLabel = new QLabel("Task: " + task.toHtmlEscaped() +
                                 (taskProblem.isEmpty() ? QString()
                                                        : "<br><span style='color:#b00020'>" +
                                                              taskProblem.toHtmlEscaped() + "</span>"));
    taskLabel->setWordWrap(true);
    taskLabel->setTextFormat(Qt::RichText);
    layout->addWidget(taskLabel);
  }

  auto* form = new QFormLayout;
  for (const OptionSpec& o : method.options) {
    QWidget* w = makeField(o);
    w->setObjectName(q(o.key));
    w->setToolTip(tooltipOf(o));
    auto* label = new QLabel(q(o.key));
    label->setToolTip(tooltipOf(o));
    form->addRow(label, w);
    fields_.emplace_back(o, w);
  }
  auto* formBox = new QWidget;
  formBox->setLayout(form);
  auto* scroll = new QScrollArea;
  scroll->setWidget(formBox);
  scroll->setWidgetResizable(true);
  scroll->setFrameShape(QFrame::NoFrame);
  layout->addWidget(scroll, 1);

  error_ = new QLabel;
  error_->setWordWrap(true);
  error_->setStyleSheet("color:#b00020");
  error_->hide();
  layout->addWidget(error_);

  auto* buttons = new QDialogButtonBox;
  run_ = buttons->addButton("Run", QDialogButtonBox::AcceptRole);
  run_->setEnabled(taskProblem.isEmpty());
  buttons->addButton(QDialogButtonBox::Cancel);
  auto* defaults = buttons->addButton(QDialogButtonBox::RestoreDefaults);
  connect(defaults, &QPushButton::clicked, this, &MethodDialog::restoreDefaults);
  connect(buttons, &QDialogButtonBox::accepted, this, &MethodDialog::accept);
  connect(buttons, &QDialogButtonBox::rejected, this, &QDialog::reject);
  layout->addWidget(buttons);

  restoreDefaults();
  setOptions(remembered(method.name));
  resize(560, std::min(760, 240 + 34 * static_cast<int>(fields_.size())));
}

nlohmann::json MethodDialog::options() const {
  nlohmann::json j = nlohmann::json::object();
  for (const auto& [o, w] : fields_)
    j[o.key] = valueOf(o, w);
  return resolveOptions(method_.options, j, method_.name);
}

void MethodDialog::setOptions(const nlohmann::json& options) {
  if (!options.is_object()) return;
  for (const auto& [o, w] : fields_)
    if (options.contains(o.key)) {
      try {
        setField(o, w, options.at(o.key));
      } catch (const std::exception&) {
        setField(o, w, o.default_value);  // a remembered value of another type: the default
      }
    }
}

void MethodDialog::restoreDefaults() {
  for (const auto& [o, w] : fields_)
    setField(o, w, o.default_value);
  error_->hide();
}

QWidget* MethodDialog::field(const std::string& key) const {
  for (const auto& [o, w] : fields_)
    if (o.key == key) return w;
  return nullptr;
}

nlohmann::json MethodDialog::remembered(const std::string& method) {
  const QString text = QSettings().value(settingsKey(method)).toString();
  if (text.isEmpty()) return nlohmann::json::object();
  const nlohmann::json j = nlohmann::json::parse(text.toStdString(), nullptr, false);
  return j.is_object() ? j : nlohmann::json::object();
}

void MethodDialog::remember(const std::string& method, const nlohmann::json& options) {
  QSettings().setValue(settingsKey(method), q(options.dump()));
}

void MethodDialog::accept() {
  try {
    remember(method_.name, options());
  } catch (const std::exception& e) {
    error_->setText(q(e.what()));
    error_->show();
    return;
  }
  QDialog::accept();
}

}  // namespace hs::gui
