package filetxn_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/filetxn/filetxn"
)

// A Queue is a job queue that worker processes share through one JSON file.
type Queue struct {
	Next int   `json:"next"` // the ID of the next job
	Jobs []Job `json:"jobs"`
}

// A Job is queued, then claimed by one worker, then done.
type Job struct {
	ID     int    `json:"id"`
	Task   string `json:"task"`
	State  string `json:"state"` // "queued", "claimed" or "done"
	Worker string `json:"worker,omitempty"`
}

var errNoJob = errors.New("no queued job")

// enqueue adds a job for task.
func enqueue(task string) func(*Queue) error {
	return func(q *Queue) error {
		q.Jobs = append(q.Jobs, Job{ID: q.Next, Task: task, State: "queued"})
		q.Next++
		return nil
	}
}

// claim gives the oldest queued job to worker and reports it in *job.
func claim(worker string, job *Job) func(*Queue) error {
	return func(q *Queue) error {
		for i := range q.Jobs {
			if q.Jobs[i].State == "queued" {
				q.Jobs[i].State, q.Jobs[i].Worker = "claimed", worker
				*job = q.Jobs[i]
				return nil
			}
		}
		return errNoJob // nothing is written
	}
}

// complete marks job id done.
func complete(id int) func(*Queue) error {
	return func(q *Queue) error {
		for i := range q.Jobs {
			if q.Jobs[i].ID == id {
				q.Jobs[i].State = "done"
			}
		}
		return nil
	}
}

// A job queue in a JSON file: any number of worker processes can enqueue,
// claim and complete jobs at the same time, and no job is lost or claimed
// twice. Each step is one transaction; the work itself happens outside.
func ExampleJSON() {
	dir, _ := os.MkdirTemp("", "filetxn-example")
	defer os.RemoveAll(dir)
	ctx := context.Background()
	queue, err := filetxn.NewStore(filepath.Join(dir, "queue.json"), filetxn.JSON[Queue]())
	if err != nil {
		fmt.Println(err)
		return
	}

	for _, task := range []string{"resize a.jpg", "resize b.jpg"} {
		if _, err := queue.Mutate(ctx, enqueue(task)); err != nil {
			fmt.Println(err)
			return
		}
	}
	var job Job
	if _, err := queue.Mutate(ctx, claim("worker-1", &job)); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("worker-1 works on", job.Task) // outside the transaction
	if _, err := queue.Mutate(ctx, complete(job.ID)); err != nil {
		fmt.Println(err)
		return
	}

	data, _ := os.ReadFile(filepath.Join(dir, "queue.json"))
	fmt.Print(string(data))
	// Output:
	// worker-1 works on resize a.jpg
	// {
	//   "next": 2,
	//   "jobs": [
	//     {
	//       "id": 0,
	//       "task": "resize a.jpg",
	//       "state": "done",
	//       "worker": "worker-1"
	//     },
	//     {
	//       "id": 1,
	//       "task": "resize b.jpg",
	//       "state": "queued"
	//     }
	//   ]
	// }
}
