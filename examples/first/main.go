// Command first is filetxn's first program: it counts its runs in
// state.json, in the working directory. Any number of processes running it
// at once count every run: each takes the file's lock, reads the count,
// adds one and replaces the file atomically.
package main

import (
	"context"
	"fmt"
	"log"

	"github.com/filetxn/filetxn"
)

// State is the document kept in state.json.
type State struct {
	Runs int `json:"runs"`
}

func main() {
	s, err := filetxn.NewStore("state.json", filetxn.JSON[State]())
	if err != nil {
		log.Fatal(err)
	}
	var runs int
	_, err = s.Mutate(context.Background(), func(st *State) error {
		st.Runs++ // under the lock, on the file as it is now; fn runs once
		runs = st.Runs
		return nil
	})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("run", runs)
}
