package benchkit

import (
	"fmt"
	"slices"
	"strings"
)

// SelectSections splits the value of a -sections flag, a comma-separated
// list, and returns an error naming the first name that is not in all.
func SelectSections(list string, all []string) ([]string, error) {
	names := strings.Split(list, ",")
	for _, s := range names {
		if !slices.Contains(all, s) {
			return nil, fmt.Errorf("-sections: no section %q (have %s)", s, strings.Join(all, ","))
		}
	}
	return names, nil
}
