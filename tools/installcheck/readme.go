package main

import (
	"bufio"
	"fmt"
	"strings"
)

// installLines returns the go get commands of README.md's install section
// (its "## Install" heading up to the next "## "), as the arguments after
// "go get", in the order the README gives them: the check runs what a new
// user copies, not a copy of it that could drift. Only the lines that
// fetch a module of this repository count; a trailing shell comment is
// dropped. It fails when the section or such a line is missing, or when no
// line installs otelretry, which the check must install on its own.
func installLines(readme string) ([][]string, error) {
	var lines [][]string
	inSection, found, fenced := false, false, false
	sc := bufio.NewScanner(strings.NewReader(readme))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if strings.HasPrefix(line, "```") {
			fenced = !fenced
			continue
		}
		if !fenced && strings.HasPrefix(line, "## ") {
			inSection = strings.TrimSpace(strings.TrimPrefix(line, "## ")) == "Install"
			found = found || inSection
			continue
		}
		if !inSection || !fenced {
			continue
		}
		if i := strings.Index(line, "#"); i >= 0 {
			line = line[:i]
		}
		f := strings.Fields(line)
		if len(f) < 3 || f[0] != "go" || f[1] != "get" || !strings.HasPrefix(f[2], rootPath) {
			continue
		}
		lines = append(lines, f[2:])
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	switch {
	case !found:
		return nil, fmt.Errorf("README.md has no \"## Install\" section: the check runs the install lines a user copies from it")
	case len(lines) == 0:
		return nil, fmt.Errorf("README.md's install section has no `go get %s...` line in a code block: the check runs the install lines a user copies from it", rootPath)
	}
	if otelLine(lines) < 0 {
		return nil, fmt.Errorf("README.md's install section has no `go get %s/otelretry@...` line", rootPath)
	}
	return lines, nil
}

// otelLine is the index of the first line that installs otelretry, or -1.
func otelLine(lines [][]string) int {
	for i, args := range lines {
		for _, a := range args {
			if path, _, _ := strings.Cut(a, "@"); path == rootPath+"/otelretry" {
				return i
			}
		}
	}
	return -1
}
