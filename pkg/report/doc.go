// Package report renders measurements and predictions for people and for
// tools: aligned text and Markdown tables (Table), JSON files with stable
// keys (WriteJSON), and line charts as SVG and PNG (Chart), with the
// number formatting every nodeagent report shares. It knows nothing of
// what is measured: compare and analyze each build their tables and
// series and hand them here.
package report
