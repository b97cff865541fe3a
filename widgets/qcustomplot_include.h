#pragma once
// Include QCustomPlot through this header, never <qcustomplot.h> directly: the project builds with
// QT_NO_KEYWORDS (torch headers use `slots`), but qcustomplot.h is written with the `signals` and
// `foreach` keywords. Map them to their Q_ forms for this one header and take them back afterwards.
// What qcustomplot.h pulls in, parsed before the keyword macros exist.
#include <QtCore/QtCore>
#include <QtGui/QtGui>
#include <QtPrintSupport/QtPrintSupport>
#include <QtWidgets/QWidget>

#ifdef QT_NO_KEYWORDS
#define signals Q_SIGNALS
#define slots Q_SLOTS
#define emit Q_EMIT
#define foreach Q_FOREACH
#include <qcustomplot.h>
#undef signals
#undef slots
#undef emit
#undef foreach
#else
#include <qcustomplot.h>
#endif
