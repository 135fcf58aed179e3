package main
import ("fmt";"time";"github.com/nodeagent-io/nodeagent/pkg/auditlog")
func main(){ c,err:=auditlog.Count("/tmp/cp/audit.log", time.Time{}, time.Time{}); fmt.Println(err); for u,v:=range c {fmt.Printf("%s %+v\n",u,v)} }
