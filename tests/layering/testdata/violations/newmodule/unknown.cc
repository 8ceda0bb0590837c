// A folder the graph does not name: a violation.
int x;
