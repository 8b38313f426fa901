"""What two or more labs share: the runtime, checkers' verdicts, fixtures, statistics, display."""
